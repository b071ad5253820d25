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

// What future.v4's SWC minifier writes: unquoted attributes, no whitespace, omitted end tags.
const MINIFIED = '<!doctype html><html lang=en dir=ltr class="docs-wrapper docs-doc-page"><body>' +
  '<nav><h2 id=nav-heading>Menu</h2></nav><main><article><div class="theme-doc-markdown markdown">' +
  '<header><h1>Title</h1></header><p>Intro<h2 class="anchor anchorTargetStickyNavbar_x" id=usage>Usage<a ' +
  'class=hash-link href=#usage>​</a></h2><p>text<br>more<img src=a.png alt=""><h3 class=anchor ' +
  "id='caf&eacute;-&amp;-more'>Café</h3><svg><path d=M0/></svg><H4 ID=Upper-Case>x</H4>" +
  '<h2 class=anchor id="first steps">x</h2></div><div class=toc><h2 id=after>x</h2></div></article>' +
  '<h2 id=toc-only>x</h2></main></body></html>';

test('minified markup: unquoted and single-quoted ids, omitted end tags, void elements', () => {
  assert.deepEqual(headingIds(MINIFIED), [
    {level: 2, id: 'usage'},
    {level: 3, id: 'café-&-more'},
    {level: 4, id: 'Upper-Case'},
    {level: 2, id: 'first steps'},
  ]);
});

test('the same page quoted or minified gives the same headings', () => {
  const quoted = PAGE;
  const minified = PAGE.replace(/\sid="([^"\s]*)"/g, ' id=$1').replace(/\n/g, '');
  assert.notEqual(minified, quoted);
  assert.deepEqual(headingIds(minified), headingIds(quoted));
});

test("GFM's generated footnotes heading is not a heading of the doc", () => {
  const html = '<div class=theme-doc-markdown><h2 id=notes>Notes<sup><a href=#user-content-fn-1 ' +
    'id=user-content-fnref-1 data-footnote-ref>1</a></sup></h2><section data-footnotes=true class=footnotes>' +
    '<h2 class="anchor sr-only" id=footnote-label>Footnotes</h2><ol><li id=user-content-fn-1>x</ol>' +
    '</section><h3 id=after>After</h3></div>';
  assert.deepEqual(headingIds(html), [{level: 2, id: 'notes'}, {level: 3, id: 'after'}]);
});

test('the content class is a whole class token', () => {
  const html = '<div class=theme-doc-markdown-extra><h2 id=no>x</h2></div>' +
    '<div class="x theme-doc-markdown"><h2 id=yes>y</h2></div>';
  assert.deepEqual(headingIds(html), [{level: 2, id: 'yes'}]);
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

test('a minified build under a baseUrl, with trailing slashes, another version and locale: same headings', async () => {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bookwise-manifest-'));
  // trailingSlash: true writes docs/next/intro/index.html for the permalink /book/fr/docs/next/intro/.
  const folder = path.join(outDir, 'fr', 'docs', 'next', 'intro');
  fs.mkdirSync(folder, {recursive: true});
  fs.writeFileSync(path.join(folder, 'index.html'), MINIFIED);
  const allContent = {
    'docusaurus-plugin-content-docs': {
      default: {
        loadedVersions: [
          {
            versionName: 'current',
            contentPath: '/site/docs',
            contentPathLocalized: '/site/i18n/fr/docusaurus-plugin-content-docs/current',
            docs: [
              {
                id: 'intro',
                source: '@site/i18n/fr/docusaurus-plugin-content-docs/current/intro.md',
                permalink: '/book/fr/docs/next/intro/',
              },
            ],
          },
        ],
      },
    },
  };
  const [doc] = await collectDocs({allContent, siteDir: '/site', outDir, baseUrl: '/book/', locale: 'fr'});
  assert.equal(doc.built, true);
  assert.equal(doc.doc_path, 'intro.md');
  assert.equal(doc.locale, 'fr');
  assert.deepEqual(doc.headings, headingIds(MINIFIED));
  assert.equal(doc.headings.length, 4);
});
