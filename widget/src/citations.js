/** Citation markers in an answer's text (`[1]`, `[1, 2]`, `[1][2]`) become links to their sources. */
import { h } from './dom.js';
import { sameSiteUrl } from './urls.js';

/** @typedef {{ n: number, url: string, title?: string, heading?: string }} CitedSource */

export const MARKERS = /\[(\d+(?:\s*,\s*\d+)*)\]/g;

/**
 * Replace markers in the text under `root` (not in code or links) by citation chips. A marker
 * naming a source that does not exist stays as it was written.
 *
 * @param {ParentNode} root
 * @param {CitedSource[]} sources
 */
export function linkCitations(root, sources) {
  const byNumber = new Map(sources.map((source) => [source.n, source]));
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  /** @type {Text[]} */
  const marked = [];
  while (walker.nextNode()) {
    const text = /** @type {Text} */ (walker.currentNode);
    if (text.data.includes('[') && !text.parentElement?.closest('code, pre, a')) marked.push(text);
  }
  for (const text of marked) text.replaceWith(...withChips(text.data, byNumber));
}

/**
 * The source numbers the markers in `text` cite.
 *
 * @param {string} text
 */
export function citedNumbers(text) {
  return [...text.matchAll(MARKERS)].flatMap((match) => match[1].split(',').map(Number));
}

/**
 * @param {string} text
 * @param {Map<number, CitedSource>} byNumber
 * @returns {(Node | string)[]}
 */
function withChips(text, byNumber) {
  /** @type {(Node | string)[]} */
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(MARKERS)) {
    const numbers = match[1].split(',').map(Number);
    const chips = numbers.flatMap((n) => chip(byNumber.get(n)) ?? []);
    if (chips.length < numbers.length) continue;
    parts.push(text.slice(last, match.index), ...chips);
    last = /** @type {number} */ (match.index) + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

/**
 * A heading as the page shows it: Markdown's code marks (`cmd_vel`) are not part of it.
 *
 * @param {string} text
 */
export function plain(text) {
  return text.replace(/`([^`]*)`/g, '$1');
}

/** @param {CitedSource | undefined} source */
function chip(source) {
  const href = source && sameSiteUrl(source.url);
  if (!source || !href) return null;
  const name = plain([source.title, source.heading].filter(Boolean).join(' › '));
  return h(
    'a',
    {
      class: 'bw-cite',
      'data-bw': 'cite',
      'data-n': source.n,
      href,
      title: name,
      'aria-label': `Source ${source.n}: ${name}`,
    },
    String(source.n),
  );
}
