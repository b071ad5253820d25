import assert from 'node:assert/strict';
import test from 'node:test';

import { landing, sameSiteUrl } from '../src/urls.js';

const PAGE = 'https://book.example.org/docs/intro';

/** The page the widget runs on (`location`), for the duration of a test. */
function onPage(/** @type {import('node:test').TestContext} */ t) {
  Object.defineProperty(globalThis, 'location', { value: new URL(PAGE), configurable: true });
  t.after(() => delete (/** @type {{ location?: unknown }} */ (globalThis)).location);
}

test('links of this site stay links, made absolute', (t) => {
  onPage(t);
  assert.equal(sameSiteUrl('/docs/kalman#update'), 'https://book.example.org/docs/kalman#update');
  assert.equal(sameSiteUrl('pid'), 'https://book.example.org/docs/pid');
  assert.equal(sameSiteUrl('https://book.example.org/blog'), 'https://book.example.org/blog');
});

test('anything that could leave the site or run code is refused, as the browser would read it', (t) => {
  onPage(t);
  for (const href of [
    'javascript:alert(1)',
    'java\tscript:alert(1)',
    ' JAVASCRIPT:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    '//evil.example.com/docs',
    '/\\evil.example.com',
    'https://evil.example.com/docs/intro',
    'http://book.example.org/docs/intro', // another origin: the scheme differs
    'mailto:someone@example.org',
    'http://[::1',
  ]) {
    assert.equal(sameSiteUrl(href), null, href);
  }
});

test('a link lands on its anchor: text fragment dropped, id decoded', () => {
  assert.deepEqual(landing(new URL('https://b.org/p#update:~:text=the%20gain')), {
    hash: '#update',
    anchor: 'update',
  });
  assert.deepEqual(landing(new URL('https://b.org/p#caf%C3%A9')), { hash: '#caf%C3%A9', anchor: 'café' });
  assert.deepEqual(landing(new URL('https://b.org/p#100%')), { hash: '#100%', anchor: '100%' });
  assert.deepEqual(landing(new URL('https://b.org/p#')), { hash: '', anchor: '' });
  assert.deepEqual(landing(new URL('https://b.org/p')), { hash: '', anchor: '' });
});
