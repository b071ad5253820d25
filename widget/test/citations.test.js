import assert from 'node:assert/strict';
import test from 'node:test';

import { citedNumbers } from '../src/citations.js';

test('the markers of an answer: single, lists with or without spaces, and side by side', () => {
  assert.deepEqual(citedNumbers('Odometry drifts [1]. Both say so [2, 3] and [4,5][6].'), [1, 2, 3, 4, 5, 6]);
});

test('brackets that are no marker cite nothing: words, empty, a trailing comma', () => {
  assert.deepEqual(citedNumbers('an array a[i], a list [] or [1,] and [x]'), []);
});
