/**
 * The Markdown renderer (marked, DOMPurify and the widget's touches: markdown.js) is most of the
 * widget's weight, and only answers need it: it is a second script, loaded when the panel first
 * opens. Until it has arrived, an answer shows as its plain text, and is rendered once it has.
 */

/**
 * @typedef {{ n: number, url: string }[]} Sources
 * @typedef {(target: HTMLElement, markdown: string, sources: Sources) => void} Render
 */

import { loadSibling } from './sibling.js';

const READY = '__bookwiseMarkdown'; // the renderer script calls window[READY](renderMarkdown)

/** @type {Render | null} */
let render = null;
/** @type {Promise<void> | null} */
let loading = null;
/** @type {Map<HTMLElement, [string, Sources]>} What waits for the renderer: the latest of each target. */
const waiting = new Map();

/**
 * Load the renderer once (again after a failure, at the next call).
 *
 * @param {string} url
 */
export function loadRenderer(url) {
  loading ??= loadSibling(url, READY, 'Markdown renderer').then(
    (loaded) => {
      render = loaded;
      for (const [target, [markdown, sources]] of waiting) render(target, markdown, sources);
      waiting.clear();
    },
    (error) => {
      loading = null; // the next call tries again
      throw error;
    },
  );
  return loading;
}

/**
 * Settles once what waits for the renderer has been rendered, or the renderer failed to load: an
 * answer is only over when the reader sees it as it will stay (citation chips and all).
 */
export function rendered() {
  return (loading ?? Promise.resolve()).catch(() => {});
}

/**
 * Render an answer's Markdown into `target`, replacing what was there (see markdown.js).
 *
 * @type {Render}
 */
export function renderMarkdown(target, markdown, sources) {
  if (render) return render(target, markdown, sources);
  waiting.set(target, [markdown, sources]);
  target.textContent = markdown;
}
