'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {collectDocs, headingIds, pageFile} = require('../src/manifest');

const PAGE = `<html><body><nav><h2 id="nav-heading">Menu</h2></nav>
<article><div class="theme-doc-markdown markdown"><header><h1>Title</h1></header>
<h2 class="anchor anchorTargetStickyNavbar_x" id="first-steps">First steps</h2>
<h3 class="anchor" id="caf&#xe9;-&amp;-more">Café</h3><h2 class="anchor" id="first-steps-1">First steps</h2>
</div></article><div class="tableOfContents"><a href="#first-steps">First steps</a><h2 id="toc-only">x</h2></div>
</body></html>`;

test('heading ids come from the doc content only, entities decoded, in order', () => {
  assert.deepEqual(headingIds(PAGE), [
    {level: 2, id: 'first-steps'},
    {level: 3, id: 'café-&-more'},
    {level: 2, id: 'first-steps-1'},
  ]);
});

test('a page without doc content has no headings', () => {
  assert.deepEqual(headingIds('<html><h2 id="x">x</h2></html>'), []);
});

function builtSite() {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookwise-manifest-'));
  fs.mkdirSync(path.join(outDir, 'docs', 'intro'), {recursive: true});
  fs.writeFileSync(path.join(outDir, 'docs', 'intro', 'index.html'), PAGE);
  fs.writeFileSync(path.join(outDir, 'docs', 'flat.html'), PAGE);
  return outDir;
}

test('page files for both trailingSlash layouts', async () => {
  const outDir = builtSite();
  assert.equal(await pageFile(outDir, '/', '/docs/intro'), path.join(outDir, 'docs/intro/index.html'));
  assert.equal(await pageFile(outDir, '/', '/docs/intro/'), path.join(outDir, 'docs/intro/index.html'));
  assert.equal(await pageFile(outDir, '/', '/docs/flat'), path.join(outDir, 'docs/flat.html'));
  assert.equal(await pageFile(outDir, '/', '/docs/missing'), null);
});

test('docs of every version are listed with paths relative to their version folder', async () => {
  const outDir = builtSite();
  const allContent = {
    'docusaurus-plugin-content-docs': {
      default: {
        loadedVersions: [
          {
            versionName: 'current',
            contentPath: '/site/docs',
            contentPathLocalized: '/site/i18n/en/docusaurus-plugin-content-docs/current',
            docs: [{id: 'intro', source: '@site/docs/01-start/intro.md', permalink: '/docs/intro'}],
          },
        ],
      },
    },
  };
  const docs = await collectDocs({allContent, siteDir: '/site', outDir, baseUrl: '/', locale: 'en'});
  assert.equal(docs.length, 1);
  assert.equal(docs[0].doc_path, '01-start/intro.md');
  assert.equal(docs[0].version, 'current');
  assert.equal(docs[0].built, true);
  assert.deepEqual(
    docs[0].headings.map((h) => h.id),
    ['first-steps', 'café-&-more', 'first-steps-1'],
  );
});
