import assert from 'node:assert/strict';
import test from 'node:test';

import { boundHistory, DEFAULT_LIMITS, fetchLimits, fetchServerConfig, selectionCap } from '../src/limits.js';

/**
 * A fetch that answers `/api/config` with `body` (or fails).
 *
 * @param {unknown} body
 */
function serving(body, { ok = true, fail = false } = {}) {
  /** @type {string[]} */
  const asked = [];
  const get = async (/** @type {string} */ url) => {
    asked.push(url);
    if (fail) throw new TypeError('Failed to fetch');
    return /** @type {Response} */ (/** @type {unknown} */ ({ ok, json: async () => body }));
  };
  return { get: /** @type {typeof fetch} */ (/** @type {unknown} */ (get)), asked };
}

test('a lowered server limit is followed: history turns cut to it (they were cut at 4,000 and refused)', async () => {
  const api = serving({ limits: { ...DEFAULT_LIMITS, max_history_chars: 100, max_history_turns: 3 } });
  const limits = await fetchLimits('https://ask.example.org', api.get);
  assert.deepEqual(api.asked, ['https://ask.example.org/api/config']);
  const turns = Array.from({ length: 8 }, (_, n) => ({ role: n % 2 ? 'assistant' : 'user', content: `${n}`.repeat(500) }));
  const sent = boundHistory(turns, 6, limits);
  assert.equal(sent.length, 3); // the server's fewer turns win over the widget's 6
  assert.deepEqual(sent.map((t) => t.content.length), [100, 100, 100]);
  assert.equal(sent[2].content[0], '7'); // the latest turns
});

test('the widget keeps its own smaller cap, and no history when the server takes none', async () => {
  const turns = Array.from({ length: 12 }, () => ({ role: 'user', content: 'x' }));
  assert.equal(boundHistory(turns, 6, DEFAULT_LIMITS).length, 6);
  const none = await fetchLimits('', serving({ limits: { ...DEFAULT_LIMITS, max_history_turns: 0 } }).get);
  assert.deepEqual(boundHistory(turns, 6, none), []);
});

test('an older server or a network error leaves the defaults; nonsense values are ignored', async () => {
  assert.deepEqual(await fetchLimits('', serving(null, { ok: false }).get), DEFAULT_LIMITS);
  assert.deepEqual(await fetchLimits('', serving(null, { fail: true }).get), DEFAULT_LIMITS);
  const odd = await fetchLimits('', serving({ limits: { max_history_chars: 'many', max_selection_chars: -1 } }).get);
  assert.deepEqual(odd, DEFAULT_LIMITS);
});

test("the server's version comes with its limits; none from an older server or a failed request", async () => {
  const served = await fetchServerConfig('', serving({ version: '0.4.1', limits: DEFAULT_LIMITS }).get);
  assert.deepEqual(served, { limits: DEFAULT_LIMITS, version: '0.4.1', answers: null });
  assert.equal((await fetchServerConfig('', serving({ limits: DEFAULT_LIMITS }).get)).version, null);
  assert.equal((await fetchServerConfig('', serving(null, { fail: true }).get)).version, null);
});

test('who answers comes with the limits: a model or the book; nothing else is taken for either', async () => {
  for (const answers of ['llm', 'extractive']) {
    assert.equal((await fetchServerConfig('', serving({ answers }).get)).answers, answers);
  }
  assert.equal((await fetchServerConfig('', serving({ answers: 'not_covered' }).get)).answers, null);
  assert.equal((await fetchServerConfig('', serving(null, { fail: true }).get)).answers, null);
});

test("a server's raised selection limit holds: it was cut at the plugin's 4,000 regression", async () => {
  const raised = { limits: { ...DEFAULT_LIMITS, max_selection_chars: 12000 } };
  const limits = await fetchLimits('', serving(raised).get);
  assert.equal(selectionCap(0, limits), 12000);
  assert.equal(selectionCap(0, { ...DEFAULT_LIMITS, max_selection_chars: 300 }), 300); // and a lowered one
});

test("an owner's cap on the selection holds only below the server's limit", () => {
  assert.equal(selectionCap(1000, DEFAULT_LIMITS), 1000);
  assert.equal(selectionCap(9000, DEFAULT_LIMITS), DEFAULT_LIMITS.max_selection_chars);
});
