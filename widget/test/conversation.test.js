import assert from 'node:assert/strict';
import test from 'node:test';

import { Conversation } from '../src/conversation.js';

const STORE_KEY = 'bookwise-conversation';

/**
 * The tab's sessionStorage, holding `stored`; `full` makes every write fail, as a full or disabled
 * storage does.
 *
 * @param {import('node:test').TestContext} t
 * @param {{ stored?: string, full?: boolean, unavailable?: boolean }} state
 */
function storage(t, { stored, full = false, unavailable = false }) {
  /** @type {Map<string, string>} */
  const items = new Map(stored === undefined ? [] : [[STORE_KEY, stored]]);
  const fake = {
    getItem(/** @type {string} */ key) {
      if (unavailable) throw new DOMException('denied', 'SecurityError');
      return items.get(key) ?? null;
    },
    setItem(/** @type {string} */ key, /** @type {string} */ value) {
      if (full || unavailable) throw new DOMException('full', 'QuotaExceededError');
      items.set(key, value);
    },
  };
  Object.defineProperty(globalThis, 'sessionStorage', { value: fake, configurable: true });
  t.after(() => delete (/** @type {{ sessionStorage?: unknown }} */ (globalThis)).sessionStorage);
  return items;
}

/** A conversation whose hooks record the quizzes it reports (no turn is shown in these tests). */
function conversation() {
  /** @type {(import('../src/conversation.js').Quiz | null)[]} */
  const quizzes = [];
  const hooks = {
    add: () => assert.fail('no turn to show'),
    state: () => {},
    meta: () => {},
    update: () => {},
    quiz: (/** @type {import('../src/conversation.js').Quiz | null} */ quiz) => quizzes.push(quiz),
    announce: () => {},
  };
  return { chat: new Conversation('https://ask.example.org', hooks), quizzes };
}

test('a quiz in progress is resumed after a reload: the next reply answers it', (t) => {
  const quiz = { action: 'quiz_page', page: { url: '/docs/kalman', heading_id: 'update' } };
  storage(t, { stored: JSON.stringify({ turns: [], quiz }) });
  const { chat, quizzes } = conversation();
  chat.restore();
  assert.deepEqual(quizzes, [quiz]);
  assert.equal(chat.empty, true);
});

test('ending a quiz is kept, so a reload does not bring it back', (t) => {
  const quiz = { action: 'quiz', page: { url: '/docs/pid' } };
  const items = storage(t, { stored: JSON.stringify({ turns: [], quiz }) });
  const { chat, quizzes } = conversation();
  chat.restore();
  chat.endQuiz();
  assert.deepEqual(quizzes, [quiz, null]);
  assert.deepEqual(JSON.parse(items.get(STORE_KEY) ?? ''), { turns: [], quiz: null });
});

test('a damaged, missing or unavailable storage starts afresh; a full one only loses the copy', (t) => {
  for (const state of [{ stored: '{"turns": [' }, {}, { unavailable: true }]) {
    storage(t, state);
    const { chat, quizzes } = conversation();
    chat.restore();
    assert.equal(chat.empty, true);
    assert.deepEqual(quizzes, []);
  }
  storage(t, { full: true });
  const { chat } = conversation();
  assert.doesNotThrow(() => chat.endQuiz());
});
