import assert from 'node:assert/strict';
import test from 'node:test';

import { loadRenderer, rendered, renderMarkdown } from '../src/render.js';

import { scriptPage } from './script-page.js';

const { appended, page } = scriptPage();

/** An answer's element: only its text matters here. */
const target = () => /** @type {HTMLElement} */ (/** @type {unknown} */ ({ textContent: '' }));

test('with no renderer loading, nothing waits for one', async () => {
  await rendered();
});

test('until the renderer has arrived, an answer shows as its plain text', () => {
  const answer = target();
  renderMarkdown(answer, 'Odometry **drifts**', []);
  assert.equal(answer.textContent, 'Odometry **drifts**');
});

test('a renderer that fails to load is said, and the next call tries again', async () => {
  const failed = loadRenderer('https://ask.example.org/widget-markdown.js');
  assert.equal(appended.length, 1);
  assert.equal(loadRenderer('https://ask.example.org/widget-markdown.js'), failed); // one load at a time
  const over = rendered();
  appended[0].onerror?.();
  await over; // a renderer that failed still lets the answer end, as its plain text
  await assert.rejects(failed, /did not load from https:\/\/ask\.example\.org\/widget-markdown\.js/);
  assert.equal(appended[0].removed, true);
  assert.notEqual(loadRenderer('https://ask.example.org/widget-markdown.js'), failed);
  assert.equal(appended.length, 2);
});

test('a script that loads but never hands over the renderer fails, and the answers end as plain text', async () => {
  const started = loadRenderer('https://ask.example.org/widget-markdown.js');
  const over = rendered();
  appended.at(-1)?.onload?.(); // it ran (an HTML page served in its place) and called nobody
  await assert.rejects(started, /did not start from https:\/\/ask\.example\.org\/widget-markdown\.js/);
  await over;
  assert.equal(appended.at(-1)?.removed, true);
  loadRenderer('https://ask.example.org/widget-markdown.js'); // tried again: left loading for the next test
});

test('answers written before it arrived are rendered when it does, once each, as last written', async () => {
  /** @type {[HTMLElement, string][]} */
  const renders = [];
  const streaming = target();
  const quote = target();
  renderMarkdown(streaming, 'Odometry', []);
  renderMarkdown(quote, '> A quote. [1]', []);
  renderMarkdown(streaming, 'Odometry drifts [1].', []);
  const over = rendered().then(() => renders.map(([element]) => element)); // rendered when it settled
  // The renderer's script calls the widget back with its renderer (the load the previous test left).
  page.__bookwiseMarkdown?.((element, markdown) => renders.push([element, markdown]));
  await loadRenderer('https://ask.example.org/widget-markdown.js');
  const settled = await over;
  assert.ok(settled.includes(streaming) && settled.includes(quote));
  assert.equal(renders.filter(([element]) => element === streaming).length, 1);
  assert.deepEqual(renders.slice(-2), [
    [streaming, 'Odometry drifts [1].'],
    [quote, '> A quote. [1]'],
  ]);
  const later = target();
  renderMarkdown(later, 'At once.', []);
  assert.deepEqual(renders.at(-1), [later, 'At once.']);
  assert.equal(later.textContent, ''); // the renderer's job now, not plain text
});
