import assert from 'node:assert/strict';
import test from 'node:test';

import { sourceRuns } from '../src/sources.js';

/** @param {number} n @param {string} module @param {string} [title] */
const source = (n, module, title = 'Page') => ({ n, url: `/docs/p${n}`, title, heading: `H${n}`, module });

test('sources of one module in one run share a heading, in the order of their numbers', () => {
  const runs = sourceRuns([source(3, 'Sensing'), source(1, 'Foundations'), source(2, 'Foundations')]);
  assert.deepEqual(
    runs?.map(([label, members]) => [label, members.map((s) => s.n)]),
    [
      ['Foundations', [1, 2]],
      ['Sensing', [3]],
    ],
  );
});

test('a module that would be headed twice leaves the list without headings', () => {
  // 1 and 3 in Foundations, 2 in Welcome: "Foundations" would head two runs.
  assert.equal(sourceRuns([source(1, 'Foundations'), source(2, 'Welcome'), source(3, 'Foundations')]), null);
});

test('a page outside any module is headed by its title', () => {
  const runs = sourceRuns([{ n: 1, url: '/docs/intro', title: 'Welcome', heading: 'Welcome', module: null }]);
  assert.deepEqual(runs?.map(([label]) => label), ['Welcome']);
});
