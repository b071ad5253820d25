import assert from 'node:assert/strict';
import { test } from 'node:test';

import { readerIdFrom } from '../src/reader.js';

/** @returns {{ store: Map<string, string>, storage: { getItem(key: string): string | null, setItem(key: string, value: string): void } }} */
function memory() {
  const store = new Map();
  return {
    store,
    storage: {
      getItem: (key) => store.get(key) ?? null,
      setItem: (key, value) => void store.set(key, value),
    },
  };
}

test('a browser keeps one reader id across page loads', () => {
  const { storage } = memory();
  let made = 0;
  const random = () => `reader-${++made}-0123456789abcdef`;
  const first = readerIdFrom(storage, random);
  assert.equal(first, 'reader-1-0123456789abcdef');
  assert.equal(readerIdFrom(storage, random), first);
  assert.equal(made, 1);
});

test('a kept value the server would refuse is replaced', () => {
  const { store, storage } = memory();
  store.set('bookwise-reader', 'short');
  assert.equal(readerIdFrom(storage, () => '0123456789abcdef0123'), '0123456789abcdef0123');
  assert.equal(store.get('bookwise-reader'), '0123456789abcdef0123');
});

test('refused or missing storage still gives an id for the page load', () => {
  const refusing = {
    getItem() {
      throw new Error('SecurityError');
    },
    setItem() {
      throw new Error('QuotaExceededError');
    },
  };
  assert.equal(readerIdFrom(refusing, () => 'x'.repeat(32)), 'x'.repeat(32));
  assert.equal(readerIdFrom(null, () => 'y'.repeat(32)), 'y'.repeat(32));
});

test('the default id has the shape the server accepts', () => {
  const id = readerIdFrom(null);
  assert.match(id, /^[0-9a-f]{32}$/);
});
