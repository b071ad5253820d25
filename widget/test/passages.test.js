import assert from 'node:assert/strict';
import test from 'node:test';

import { quotedIn } from '../src/passages.js';

const ANSWER = [
  '*From the book: no language model is configured.*',
  '',
  '> The filter never stores old measurements. [1]',
  '',
  '> For a position `x` the two steps are:',
  '>',
  '> ```text',
  '> predict:  x⁻ = x + u',
  '> ```',
  '>',
  '> [2]',
  '',
  'Both say so [1, 2].',
  '',
  '> - A list item of the first source.',
  '> - Another one. [1]',
].join('\n');

test("an answer's blockquotes citing a source are its quotes of it, without their quote marks", () => {
  assert.deepEqual(quotedIn(ANSWER, 1), [
    'The filter never stores old measurements. [1]\n',
    '- A list item of the first source.\n- Another one. [1]',
  ]);
  assert.deepEqual(quotedIn(ANSWER, 2), [
    'For a position `x` the two steps are:\n\n```text\npredict:  x⁻ = x + u\n```\n\n[2]\n',
  ]);
  assert.deepEqual(quotedIn(ANSWER, 3), []);
});
