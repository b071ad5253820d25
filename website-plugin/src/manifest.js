'use strict';

/**
 * The build manifest: every doc's permalink and the heading ids its built page really has.
 * `bookwise ingest --manifest` checks its own URL/anchor computation against it, so a
 * Docusaurus upgrade that changes slugging is caught in CI instead of by a reader's dead link.
 */

const fs = require('fs/promises');
const path = require('path');

const MANIFEST_VERSION = 1;
const HEADING_ID = /<h([1-6])\b[^>]*?\sid="([^"]*)"/g;
const CONTENT_START = /<div class="[^"]*\btheme-doc-markdown\b[^"]*"/;
const ENTITIES = {amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", '#x27': "'"};

function decodeEntities(text) {
  return text.replace(/&(#?\w+);/g, (match, name) => {
    if (name in ENTITIES) return ENTITIES[name];
    if (/^#x[0-9a-f]+$/i.test(name)) return String.fromCodePoint(parseInt(name.slice(2), 16));
    if (/^#\d+$/.test(name)) return String.fromCodePoint(parseInt(name.slice(1), 10));
    return match;
  });
}

/**
 * Heading ids of a built doc page, in document order. Only the doc content counts: the
 * navbar, sidebar and table of contents are not part of the page's text.
 * @param {string} html
 * @returns {{level: number, id: string}[]}
 */
function headingIds(html) {
  const start = html.search(CONTENT_START);
  if (start < 0) return [];
  const end = html.indexOf('</article>', start);
  const content = html.slice(start, end < 0 ? undefined : end);
  return [...content.matchAll(HEADING_ID)].map((m) => ({level: Number(m[1]), id: decodeEntities(m[2])}));
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
