import assert from 'node:assert/strict';
import test from 'node:test';

import { MAX_RECENT, RECENT_KEY, instantUrl, recentSearches, segments } from '../src/search-api.js';
import { isSearchShortcut } from '../src/search.js';

test('a keystroke search keeps the query as typed (a trailing space says its last word is complete)', () => {
  const url = new URL(instantUrl('https://api.example.org', 'kalman ', { version: '2.0', locale: 'fr' }));
  assert.equal(url.pathname, '/api/search/instant');
  assert.equal(url.searchParams.get('q'), 'kalman ');
  assert.equal(url.searchParams.get('version'), '2.0');
  assert.equal(url.searchParams.get('locale'), 'fr');
  assert.equal(new URL(instantUrl('https://api.example.org', 'pid', {})).searchParams.has('version'), false);
});

test('marks cut the text into plain and marked segments, whatever the marks', () => {
  assert.deepEqual(segments('Integral windup', [[9, 15]]), [
    { text: 'Integral ', marked: false },
    { text: 'windup', marked: true },
  ]);
  // Out of order, overlapping, empty or beyond the text: dropped, the text kept whole.
  assert.deepEqual(
    segments('abc def', [
      [4, 7],
      [0, 3],
      [5, 6],
      [2, 2],
      [6, 99],
    ]),
    [
      { text: 'abc ', marked: false },
      { text: 'def', marked: true },
    ],
  );
  assert.deepEqual(segments('', []), [{ text: '', marked: false }]);
  assert.equal(
    segments('<img src=x onerror=alert(1)>', [[0, 4]])
      .map((part) => part.text)
      .join(''),
    '<img src=x onerror=alert(1)>',
  );
});

test('recent searches: newest first, once each, at most five, and a broken store is no store', () => {
  /** @type {Map<string, string>} */
  const kept = new Map();
  const storage = {
    getItem: (/** @type {string} */ key) => kept.get(key) ?? null,
    setItem: kept.set.bind(kept),
  };
  const recent = recentSearches(storage);
  for (const query of ['pid', 'kalman', 'pid', ' ', 'a', 'b', 'c', 'd']) recent.add(query);
  assert.deepEqual(recent.list(), ['d', 'c', 'b', 'a', 'pid']);
  assert.equal(recent.list().length, MAX_RECENT);
  kept.set(RECENT_KEY, '{not json');
  assert.deepEqual(recent.list(), []);
  assert.deepEqual(recentSearches(null).list(), []);
});

test('Ctrl+K and ⌘K open search anywhere; / only outside a field', () => {
  const key = (/** @type {string} */ name, mods = {}) => ({
    key: name,
    ctrlKey: false,
    metaKey: false,
    altKey: false,
    shiftKey: false,
    ...mods,
  });
  assert.equal(isSearchShortcut(key('k', { ctrlKey: true }), true), true);
  assert.equal(isSearchShortcut(key('K', { metaKey: true }), false), true);
  assert.equal(isSearchShortcut(key('k'), false), false);
  assert.equal(isSearchShortcut(key('k', { ctrlKey: true, shiftKey: true }), false), false);
  assert.equal(isSearchShortcut(key('/'), false), true);
  assert.equal(isSearchShortcut(key('/'), true), false);
  assert.equal(isSearchShortcut(key('/', { ctrlKey: true }), false), false);
});
