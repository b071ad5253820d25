import assert from 'node:assert/strict';
import test from 'node:test';

import { ApiError, streamChat, unreachable } from '../src/api.js';

/** @type {import('../src/api.js').ChatBody} */
const BODY = { question: 'What is odometry?', mode: 'normal', page: { url: '/docs/intro' } };

test('a cross-origin API that cannot be reached: both causes, and the setting with this origin', () => {
  const error = unreachable('https://ask.example.org', 'http://localhost:3000');
  assert.ok(error instanceof ApiError);
  assert.equal(error.retryable, true);
  assert.match(error.message, /server at https:\/\/ask\.example\.org is not running/);
  assert.match(error.message, /set BOOKWISE_ALLOWED_ORIGINS=http:\/\/localhost:3000 on the server/);
});

test('a same-origin API that cannot be reached: no origin setting to blame', () => {
  const error = unreachable('http://localhost:8000', 'http://localhost:8000');
  assert.match(error.message, /server at http:\/\/localhost:8000 running/);
  assert.doesNotMatch(error.message, /ALLOWED_ORIGINS/);
});

test('a fetch rejected at the network level (a refused CORS request) becomes that message', async (t) => {
  t.mock.method(globalThis, 'fetch', async () => {
    throw new TypeError('Failed to fetch');
  });
  const location = { origin: 'http://localhost:3000' };
  Object.defineProperty(globalThis, 'location', { value: location, configurable: true });
  t.after(() => delete (/** @type {{ location?: unknown }} */ (globalThis)).location);
  const signal = new AbortController().signal;
  await assert.rejects(
    streamChat('https://ask.example.org', BODY, { signal, onEvent: () => {} }),
    (error) =>
      error instanceof ApiError && /BOOKWISE_ALLOWED_ORIGINS=http:\/\/localhost:3000/.test(error.message),
  );
});

test('a stopped request stays an abort, not a network error', async (t) => {
  const controller = new AbortController();
  t.mock.method(globalThis, 'fetch', async () => {
    controller.abort();
    throw new DOMException('aborted', 'AbortError');
  });
  await assert.rejects(
    streamChat('https://ask.example.org', BODY, { signal: controller.signal, onEvent: () => {} }),
    { name: 'AbortError' },
  );
});

/**
 * The API at `fetch`, answering with `response` and recording what was posted.
 *
 * @param {import('node:test').TestContext} t
 * @param {() => Response} response
 */
function answering(t, response) {
  /** @type {{ url: string, init: RequestInit }[]} */
  const posted = [];
  t.mock.method(globalThis, 'fetch', async (/** @type {string} */ url, /** @type {RequestInit} */ init) => {
    posted.push({ url, init });
    return response();
  });
  return posted;
}

/** @param {string[]} chunks  An SSE stream, cut where the network might cut it. */
function streamOf(chunks) {
  const bytes = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(bytes.encode(chunk));
      controller.close();
    },
  });
}

test("an answer's events arrive parsed, in order, however the stream is cut", async (t) => {
  const stream = [
    'event: meta\ndata: {"request_id": "r1"}\n\nevent: sources\ndata: {"sources": []}\n\nev',
    'ent: token\ndata: {"text": "Odo',
    'metry é"}\r\n\r\nevent: done\ndata: {"answer_kind": "answer"}\n\n',
  ];
  const posted = answering(t, () => new Response(streamOf(stream), { status: 200 }));
  /** @type {import('../src/api.js').AnswerEvent[]} */
  const events = [];
  const signal = new AbortController().signal;
  await streamChat('https://ask.example.org', BODY, { signal, onEvent: (event) => events.push(event) });
  assert.deepEqual(events, [
    ['meta', { request_id: 'r1' }],
    ['sources', { sources: [] }],
    ['token', { text: 'Odometry é' }],
    ['done', { answer_kind: 'answer' }],
  ]);
  assert.equal(posted[0].url, 'https://ask.example.org/api/chat');
  assert.deepEqual(JSON.parse(String(posted[0].init.body)), BODY);
  assert.equal(posted[0].init.credentials, 'omit');
});

test("a refused request carries the API's message, whether it may be retried, and when", async (t) => {
  const error = { code: 'rate_limited', message: 'Too many questions.', retryable: true };
  answering(t, () => Response.json({ error }, { status: 429, headers: { 'Retry-After': '7' } }));
  const signal = new AbortController().signal;
  await assert.rejects(streamChat('', BODY, { signal, onEvent: () => {} }), (refused) => {
    assert.ok(refused instanceof ApiError);
    assert.equal(refused.message, 'Too many questions.');
    assert.equal(refused.retryable, true);
    assert.equal(refused.retryAfterS, 7);
    return true;
  });
});

test("a proxy's error page (not JSON) is told by its status", async (t) => {
  answering(t, () => new Response('<h1>Bad gateway</h1>', { status: 502 }));
  const signal = new AbortController().signal;
  await assert.rejects(streamChat('', BODY, { signal, onEvent: () => {} }), {
    message: 'The answer service replied 502.',
    retryAfterS: 0,
  });
});
