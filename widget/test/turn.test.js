import assert from 'node:assert/strict';
import test from 'node:test';

import { keptEvents } from '../src/turn.js';

test('a finished answer is kept with its tokens as one, before done, so a reload replays it whole', () => {
  /** @type {import('../src/api.js').AnswerEvent[]} */
  const events = [
    ['meta', { request_id: 'r1' }],
    ['sources', { sources: [{ n: 1, url: '/docs/a', title: 'A', heading: 'Intro' }] }],
    ['token', { text: 'Odometry ' }],
    ['token', { text: 'drifts [1].' }],
    ['done', { answer_kind: 'answer' }],
  ];
  assert.deepEqual(keptEvents(events, 'Odometry drifts [1].'), [
    ['meta', { request_id: 'r1' }],
    ['sources', { sources: [{ n: 1, url: '/docs/a', title: 'A', heading: 'Intro' }] }],
    ['token', { text: 'Odometry drifts [1].' }],
    ['done', { answer_kind: 'answer' }],
  ]);
  assert.equal(events.length, 5); // the turn's own record is left as it was
});
