import assert from 'node:assert/strict';
import test from 'node:test';

import { ApiError, streamChat, unreachable } from '../src/api.js';

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
  t.after(() => delete globalThis.location);
  const signal = new AbortController().signal;
  await assert.rejects(
    streamChat('https://ask.example.org', {}, { signal, onEvent: () => {} }),
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
    streamChat('https://ask.example.org', {}, { signal: controller.signal, onEvent: () => {} }),
    { name: 'AbortError' },
  );
});
