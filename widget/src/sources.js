/** The book's sections behind an answer: the sources list, the quotes, the closest sections. */
import { h } from './dom.js';
import { renderMarkdown } from './render.js';
import { sameSiteUrl } from './urls.js';

/**
 * @typedef {object} Source  One entry of the `sources` event (fields the widget uses).
 * @property {number} n
 * @property {string} url
 * @property {string} title
 * @property {string} heading
 * @property {string[]} [breadcrumb]
 * @property {string | null} [module]
 * @property {string | null} [chapter]
 * @typedef {{ n: number, text: string, url: string }} Quote
 */

/**
 * The sources, grouped by module and chapter; each links to its section.
 *
 * @param {Source[]} sources
 */
export function sourcesList(sources) {
  /** @type {Map<string, Source[]>} */
  const groups = new Map();
  for (const source of sources) {
    const label = [source.module, source.chapter].filter(Boolean).join(' › ');
    groups.set(label, [...(groups.get(label) ?? []), source]);
  }
  return h(
    'section',
    { class: 'bw-sources', 'data-bw': 'sources', 'aria-label': 'Sources' },
    h('p', { class: 'bw-label' }, 'Sources'),
    [...groups].flatMap(([label, members]) => [
      label && h('p', { class: 'bw-group' }, label),
      linkList(members),
    ]),
  );
}

/**
 * What a not-covered answer shows: that the book seems silent, and where it comes closest.
 *
 * @param {Source[]} sources
 */
export function closestSections(sources) {
  return h(
    'div',
    { class: 'bw-not-covered', 'data-bw': 'not-covered' },
    h('p', { class: 'bw-notice' }, 'The book doesn’t seem to cover this.'),
    sources.length > 0 && [h('p', {}, 'The closest sections:'), linkList(sources)],
  );
}

/**
 * Verbatim passages from the cited sections (Markdown: code stays a code block with its copy
 * button, inline code is code), each linking to where it stands.
 *
 * @param {Quote[]} quotes
 * @param {Source[]} sources
 */
export function quotesBlock(quotes, sources) {
  return h(
    'section',
    { class: 'bw-quotes', 'data-bw': 'quotes', 'aria-label': 'From the book' },
    h('p', { class: 'bw-label' }, 'From the book'),
    quotes.map((quote) => {
      const source = sources.find((candidate) => candidate.n === quote.n);
      const passage = h('div', { class: 'bw-md' });
      renderMarkdown(passage, quote.text, []);
      return h('blockquote', {}, passage, sourceLink({ ...source, n: quote.n, url: quote.url }));
    }),
  );
}

/** @param {Source[]} sources */
function linkList(sources) {
  return h(
    'ul',
    {},
    sources.map((source) => h('li', {}, sourceLink(source))),
  );
}

/** @param {Partial<Source> & { n: number, url: string }} source */
function sourceLink(source) {
  const name = [source.title, source.heading !== source.title && source.heading].filter(Boolean).join(' › ');
  const content = [h('span', { class: 'bw-n', 'aria-hidden': 'true' }, String(source.n)), name || source.url];
  const href = sameSiteUrl(source.url);
  if (!href) return h('span', { class: 'bw-source' }, content);
  const path = [...(source.breadcrumb ?? []), source.heading].filter(Boolean).join(' › ');
  const props = {
    class: 'bw-source',
    'data-bw': 'source-link',
    'data-n': source.n,
    href,
    rel: 'noopener noreferrer',
    title: path,
  };
  return h('a', props, content);
}
