import assert from 'node:assert/strict';
import test from 'node:test';

import { createSseParser } from '../src/sse.js';

/**
 * Every way a stream can arrive: whole, one character at a time, and cut in two at each position.
 *
 * @param {string} stream
 */
function chunkings(stream) {
  const ways = [[stream], [...stream]];
  for (let cut = 1; cut < stream.length; cut++) ways.push([stream.slice(0, cut), stream.slice(cut)]);
  return ways;
}

/**
 * The events of `stream` as [name, data], the same however it was cut (else the test fails).
 *
 * @param {string} stream
 */
function parse(stream) {
  const results = chunkings(stream).map((chunks) => {
    /** @type {[string, string][]} */
    const events = [];
    const parser = createSseParser(({ event, data }) => events.push([event, data]));
    for (const chunk of chunks) parser.push(chunk);
    return events;
  });
  for (const result of results.slice(1)) assert.deepEqual(result, results[0], JSON.stringify(stream));
  return results[0];
}

test('named events, in order; an unnamed one is a "message"', () => {
  assert.deepEqual(parse('event: meta\ndata: {"a":1}\n\ndata: plain\n\n'), [
    ['meta', '{"a":1}'],
    ['message', 'plain'],
  ]);
});

test('CRLF, CR and LF all end a line, even a CRLF cut between its two characters', () => {
  const stream = 'event: token\r\ndata: a\r\n\r\nevent: token\rdata: b\r\revent: done\ndata: c\n\n';
  assert.deepEqual(parse(stream), [
    ['token', 'a'],
    ['token', 'b'],
    ['done', 'c'],
  ]);
});

test('data lines join with newlines; one space after the colon is dropped, not two', () => {
  assert.deepEqual(parse('data: one\ndata:two\ndata:  three\n\n'), [['message', 'one\ntwo\n three']]);
});

test('comments, id, retry and unknown fields are ignored; a field without a colon has an empty value', () => {
  const stream = ': keep-alive\nid: 7\nretry: 100\nfoo: bar\nevent: token\ndata\n\n';
  assert.deepEqual(parse(stream), [['token', '']]);
});

test('an event without data is not dispatched, and its name does not leak into the next one', () => {
  assert.deepEqual(parse('event: ping\n\ndata: x\n\n'), [['message', 'x']]);
});

test('an event the stream ends before its blank line is not dispatched', () => {
  assert.deepEqual(parse('event: done\ndata: {}\n'), []);
});
