/** The book's sections behind an answer: the sources list, the quotes, the closest sections. */
import { plain } from './citations.js';
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
 * The sources in the order of their numbers (the server ranks them: 1 is the best, and the answer's
 * chips, quotes, copy and feedback all use these numbers), each linking to its section. When each
 * module (and chapter) holds one run of numbers, its sources share a heading; a page outside any
 * module is headed by its own title. When a module would be headed twice, the list has no headings:
 * six sources under six alternating headings read worse than six lines.
 *
 * @param {Source[]} sources
 */
export function sourcesList(sources) {
  const runs = sourceRuns(sources);
  return h(
    'section',
    { class: 'bw-sources', 'data-bw': 'sources', 'aria-label': 'Sources' },
    h('p', { class: 'bw-label' }, 'Sources'),
    runs
      ? runs.flatMap(([label, members]) => [
          label && h('p', { class: 'bw-group' }, label),
          linkList(members, label),
        ])
      : linkList([...sources].sort((a, b) => a.n - b.n)),
  );
}

/**
 * The sources by number, in runs of one module and chapter (or page, outside any module), each with
 * its heading; null when a heading would come twice.
 *
 * @param {Source[]} sources
 * @returns {[string, Source[]][] | null}
 */
export function sourceRuns(sources) {
  /** @type {[string, Source[]][]} */
  const runs = [];
  for (const source of [...sources].sort((a, b) => a.n - b.n)) {
    const label = [source.module, source.chapter].filter(Boolean).join(' › ') || source.title || '';
    const run = runs[runs.length - 1];
    if (run && run[0] === label) run[1].push(source);
    else runs.push([label, [source]]);
  }
  return new Set(runs.map(([label]) => label)).size === runs.length ? runs : null;
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

/**
 * @param {Source[]} sources
 * @param {string} [group]  Their heading: a page title that is the heading is not said again.
 */
function linkList(sources, group) {
  return h(
    'ul',
    {},
    sources.map((source) => h('li', {}, sourceLink(source, group))),
  );
}

/**
 * @param {Partial<Source> & { n: number, url: string }} source
 * @param {string} [group]
 */
function sourceLink(source, group) {
  const title = source.title !== group && source.title;
  const heading = source.heading !== source.title && source.heading;
  const name = plain([title || (!heading && source.title), heading].filter(Boolean).join(' › '));
  const content = [h('span', { class: 'bw-n', 'aria-hidden': 'true' }, String(source.n)), name || source.url];
  const href = sameSiteUrl(source.url);
  if (!href) return h('span', { class: 'bw-source' }, content);
  const path = plain([...(source.breadcrumb ?? []), source.heading].filter(Boolean).join(' › '));
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
