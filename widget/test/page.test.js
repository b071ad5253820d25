import assert from 'node:assert/strict';
import test from 'node:test';

import { headingIdBefore, pageContext } from '../src/page.js';

/**
 * A page at `pathname` with these Docusaurus meta tags and <html lang>: just what pageContext reads.
 *
 * @param {import('node:test').TestContext} t
 * @param {{ pathname: string, meta?: Record<string, string>, lang?: string }} page
 */
function onPage(t, { pathname, meta = {}, lang = '' }) {
  const document = {
    documentElement: { lang },
    /** @param {string} selector */
    querySelector(selector) {
      const name = /^meta\[name="(\w+)"\]$/.exec(selector)?.[1];
      return name && name in meta ? { getAttribute: () => meta[name] } : null;
    },
  };
  const global = /** @type {Record<string, unknown>} */ (globalThis);
  Object.assign(global, { document, location: { pathname } });
  t.after(() => {
    delete global.document;
    delete global.location;
  });
}

test("a selection's page and section are sent, with the site's version and locale", (t) => {
  onPage(t, { pathname: '/docs/other', meta: { docusaurus_version: '2.0', docusaurus_locale: 'fr' } });
  const selection = { text: 'the gain', url: '/docs/kalman', headingId: 'update' };
  assert.deepEqual(pageContext(selection), {
    url: '/docs/kalman',
    heading_id: 'update',
    version: '2.0',
    locale: 'fr',
  });
});

test('absent values are left out, not sent empty; the locale falls back to <html lang>', (t) => {
  onPage(t, { pathname: '/docs/intro', lang: 'de' });
  assert.deepEqual(pageContext({ text: 'x', url: '/docs/intro' }), { url: '/docs/intro', locale: 'de' });
  onPage(t, { pathname: '/docs/intro' });
  assert.deepEqual(pageContext(undefined), { url: '/docs/intro' }); // no content selector: no section
});

/**
 * Nodes at positions in document order, as much of the DOM as headingIdBefore reads.
 *
 * @param {number} at
 * @param {string} [id]
 */
function nodeAt(at, id = '') {
  const FOLLOWING = 4;
  const PRECEDING = 2;
  return {
    at,
    id,
    /** @param {{ at: number }} other */
    compareDocumentPosition: (other) => (other.at > at ? FOLLOWING : PRECEDING),
  };
}

test("a selection belongs to the last heading before it: its section's id", (t) => {
  const global = /** @type {Record<string, unknown>} */ (globalThis);
  global.Node = { DOCUMENT_POSITION_FOLLOWING: 4 };
  t.after(() => delete global.Node);
  const headings = [nodeAt(1, 'odometry'), nodeAt(5, 'drift'), nodeAt(9, 'correction')];
  const root = /** @type {Element} */ (/** @type {unknown} */ ({ querySelectorAll: () => headings }));
  const at = (/** @type {number} */ n) => /** @type {Node} */ (/** @type {unknown} */ (nodeAt(n)));
  assert.equal(headingIdBefore(root, at(6)), 'drift');
  assert.equal(headingIdBefore(root, at(5.5)), 'drift'); // in the heading itself
  assert.equal(headingIdBefore(root, at(12)), 'correction');
  assert.equal(headingIdBefore(root, at(0)), undefined); // before the first heading: no section
});
