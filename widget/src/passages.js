/**
 * The passages an answer quoted from a source, and where they stand on the page a citation lands on.
 * They are matched word for word (letters and digits, case ignored), so Markdown's marks, the page's
 * markup and whitespace do not matter.
 */
import { citedNumbers, MARKERS } from './citations.js';

/**
 * @typedef {{ node: Text, start: number, end: number, word: string }} Word  A word of the page's
 *   text, and where it stands.
 */

const WORD = /[\p{L}\p{N}]+/gu;
const BLOCKQUOTE = /(?:^ {0,3}>.*(?:\n|$))+/gm;
const QUOTE_MARK = /^ {0,3}> ?/gm;
// A passage is found by its first and its last words, so that a word the page renders otherwise in
// between (a formula, an image's alt text, a link written as its URL) does not lose it.
const ENDS = 6;
const SLACK = 8; // words the page may have beyond twice the quote's (a code block's title)
const CLOSING = /^[.,;:!?…)\]"'”’]+/; // the sentence's end after its last word is marked with it

/**
 * The blockquotes of an answer's Markdown that cite source `n` (an extractive answer is made of them).
 *
 * @param {string} markdown
 * @param {number} n
 */
export function quotedIn(markdown, n) {
  const blocks = (markdown.match(BLOCKQUOTE) ?? []).map((block) => block.replace(QUOTE_MARK, ''));
  return blocks.filter((block) => citedNumbers(block).includes(n));
}

/**
 * Where the quotes (Markdown) stand in the text of `elements`: a Range for each one found and shown.
 *
 * @param {Element[]} elements  A section: its heading and what follows it.
 * @param {string[]} quotes
 * @returns {Range[]}  In the page's order.
 */
export function findQuotes(elements, quotes) {
  if (!quotes.length) return [];
  const words = pageWords(elements);
  return quotes
    .flatMap((quote) => locate(words, quoteWords(quote)) ?? [])
    .filter((range) => range.getClientRects().length > 0) // not in a closed tab or <details>
    .sort((a, b) => a.compareBoundaryPoints(Range.START_TO_START, b));
}

/**
 * The words of a quote that the page shows: Markdown's link targets, code fences (with their
 * language and title), list markers, citation markers and HTML tags are not among them.
 *
 * @param {string} markdown
 */
function quoteWords(markdown) {
  const shown = markdown
    .replace(/^\s*(?:```|~~~).*$/gm, '')
    .replace(/\]\([^)]*\)/g, ']')
    .replace(/^\s*(?:[-*+]|\d+[.)])\s/gm, '')
    .replace(MARKERS, '')
    .replace(/<[^>]*>|&#?\w+;/g, ' ');
  return shown.toLowerCase().match(WORD) ?? [];
}

/**
 * The words of the text under `elements`. Buttons (a code block's Copy, the widget's Ask) are not
 * the book's text.
 *
 * @param {Element[]} elements
 */
function pageWords(elements) {
  /** @type {Word[]} */
  const words = [];
  for (const element of elements) {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = /** @type {Text} */ (walker.currentNode);
      if (node.parentElement?.closest('button')) continue;
      for (const { 0: word, index } of node.data.matchAll(WORD)) {
        words.push({ node, start: index, end: index + word.length, word: word.toLowerCase() });
      }
    }
  }
  return words;
}

/**
 * The page's text from the quote's first words to its last ones, not much shorter or longer than
 * the quote; null when the page does not have them.
 *
 * @param {Word[]} words
 * @param {string[]} quote
 */
function locate(words, quote) {
  if (!quote.length) return null;
  const ends = Math.min(ENDS, quote.length);
  const [head, tail] = [quote.slice(0, ends), quote.slice(-ends)];
  for (let first = indexOf(words, head, 0); first >= 0; first = indexOf(words, head, first + 1)) {
    const from = first + Math.max(0, Math.ceil(quote.length / 2) - ends);
    const last = indexOf(words, tail, from, first + 2 * quote.length + SLACK);
    if (last >= 0) {
      const range = document.createRange();
      range.setStart(words[first].node, words[first].start);
      const end = words[last + ends - 1];
      range.setEnd(end.node, end.end + (end.node.data.slice(end.end).match(CLOSING)?.[0].length ?? 0));
      return range;
    }
  }
  return null;
}

/**
 * Where `run` first stands in `words[from:to]`, or -1.
 *
 * @param {Word[]} words
 * @param {string[]} run
 * @param {number} from
 * @param {number} [to]
 */
function indexOf(words, run, from, to = words.length) {
  for (let i = from; i + run.length <= Math.min(to, words.length); i++) {
    if (run.every((word, j) => words[i + j].word === word)) return i;
  }
  return -1;
}
