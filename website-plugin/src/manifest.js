'use strict';

/**
 * The build manifest: every doc's permalink and the heading ids its built page really has.
 * `bookwise ingest --manifest` checks its own URL/anchor computation against it, so a
 * Docusaurus upgrade that changes slugging is caught in CI instead of by a reader's dead link.
 */

const fs = require('fs/promises');
const path = require('path');
// A real HTML parser: minified builds (future.v4's SWC minifier) write unquoted attributes
// (`<h2 id=usage>`), entities in ids, implied end tags; a pattern over the text misses them.
const {Parser} = require('htmlparser2');

const MANIFEST_VERSION = 1;
const CONTENT_CLASS = 'theme-doc-markdown';
const HEADING = /^h([1-6])$/;

/**
 * Heading ids of a built doc page, in document order, entities decoded. Only the doc content
 * (the element with the class `theme-doc-markdown`) counts: the navbar, sidebar and table of
 * contents are not part of the page's text.
 * @param {string} html
 * @returns {{level: number, id: string}[]}
 */
function headingIds(html) {
  const headings = [];
  // Depth of open elements, and the depths at which the doc content and GFM's footnotes section
  // were opened (0: outside them). The footnotes' generated "footnote-label" heading is no heading
  // of the doc's text, so no source has it.
  let depth = 0;
  let contentDepth = 0;
  let footnotesDepth = 0;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        depth += 1;
        if (contentDepth === 0 && (attributes.class || '').split(/\s+/).includes(CONTENT_CLASS)) {
          contentDepth = depth;
          return;
        }
        if (footnotesDepth === 0 && 'data-footnotes' in attributes) footnotesDepth = depth;
        const level = HEADING.exec(name);
        if (contentDepth > 0 && footnotesDepth === 0 && level && attributes.id) {
          headings.push({level: Number(level[1]), id: attributes.id});
        }
      },
      onclosetag() {
        // The parser closes every element it opened (implied and void ones too), so depth balances.
        if (depth === contentDepth) contentDepth = 0;
        if (depth === footnotesDepth) footnotesDepth = 0;
        depth -= 1;
      },
    },
    {decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true},
  );
  parser.end(html);
  return headings;
}

/**
 * The HTML file Docusaurus wrote for a permalink: `x/index.html`, or `x.html` with trailingSlash: false.
 * @param {string} outDir
 * @param {string} baseUrl
 * @param {string} permalink
 */
async function pageFile(outDir, baseUrl, permalink) {
  const route = decodeURI(permalink.slice(baseUrl.length)).replace(/\/+$/, '');
  const candidates = route === '' ? ['index.html'] : [path.join(route, 'index.html'), `${route}.html`];
  for (const candidate of candidates) {
    const file = path.join(outDir, candidate);
    try {
      await fs.access(file);
      return file;
    } catch {
      // try the next layout
    }
  }
  return null;
}

/** Doc path relative to its version's folder (the key Bookwise ingestion uses). */
function docPath(siteDir, version, source) {
  const absolute = path.join(siteDir, source.replace(/^@site\//, ''));
  for (const folder of [version.contentPathLocalized, version.contentPath]) {
    if (folder && !path.relative(folder, absolute).startsWith('..')) {
      return path.relative(folder, absolute).split(path.sep).join('/');
    }
  }
  return source.replace(/^@site\//, '');
}

/**
 * Manifest entries for every docs plugin instance's docs (drafts are not built, so not listed).
 * @param {object} args
 * @param {Record<string, Record<string, any>>} args.allContent  Docusaurus' content of every plugin
 * @param {string} args.siteDir
 * @param {string} args.outDir
 * @param {string} args.baseUrl
 * @param {string} args.locale
 */
async function collectDocs({allContent, siteDir, outDir, baseUrl, locale}) {
  const instances = allContent['docusaurus-plugin-content-docs'] || {};
  const docs = [];
  for (const [pluginId, content] of Object.entries(instances)) {
    for (const version of content.loadedVersions || []) {
      for (const doc of version.docs) {
        const file = await pageFile(outDir, baseUrl, doc.permalink);
        const html = file ? await fs.readFile(file, 'utf8') : '';
        docs.push({
          plugin_id: pluginId,
          doc_id: doc.id,
          doc_path: docPath(siteDir, version, doc.source),
          source: doc.source.replace(/^@site\//, ''),
          permalink: doc.permalink,
          version: version.versionName,
          locale,
          unlisted: Boolean(doc.unlisted),
          built: file !== null,
          headings: headingIds(html),
        });
      }
    }
  }
  return docs.sort((a, b) => (a.permalink < b.permalink ? -1 : a.permalink > b.permalink ? 1 : 0));
}

async function writeManifest({file, siteConfig, locale, docs}) {
  const manifest = {
    manifest_version: MANIFEST_VERSION,
    generator: 'docusaurus-plugin-bookwise',
    site_url: siteConfig.url,
    base_url: siteConfig.baseUrl,
    trailing_slash: siteConfig.trailingSlash ?? null,
    locale,
    docs,
  };
  await fs.writeFile(file, `${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
  return manifest;
}

module.exports = {MANIFEST_VERSION, collectDocs, headingIds, pageFile, writeManifest};
