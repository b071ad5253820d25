import assert from 'node:assert/strict';
import test from 'node:test';

import { loadSearch } from '../src/search.js';

import { scriptPage } from './script-page.js';

const { appended, page } = scriptPage();
const URL_ = 'https://ask.example.org/widget-search.js';

test('a script that runs without handing the modal over fails, and the next shortcut loads it again', async () => {
  const first = loadSearch(URL_);
  appended[0].onload?.(); // it ran (a page served in its place) and called nobody
  await assert.rejects(first, /did not start from https:\/\/ask\.example\.org\/widget-search\.js/);
  assert.equal(appended[0].removed, true);
  const second = loadSearch(URL_);
  assert.notEqual(second, first);
  assert.equal(appended.length, 2);
  const Modal = /** @type {typeof import('../src/search-modal.js').SearchModal} */ (
    /** @type {unknown} */ (class {})
  );
  page.__bookwiseSearch?.(Modal); // the real script hands it over as it runs, before its load event
  appended[1].onload?.();
  assert.equal(await second, Modal);
});
