/**
 * What the widget adds to the host page itself, outside its shadow root: an "Ask" button on the
 * content's code blocks, a navbar item, the landed citation's highlight, room for the docked panel.
 * Styled by one constructed stylesheet (no inline styles, so a strict CSP allows it).
 */
import { h } from './dom.js';
import { headingIdBefore } from './page.js';
import { findQuotes } from './passages.js';

/** @typedef {import('./page.js').Selection} Selection */

const CODE_ASK = 'data-bookwise-code-ask';
const NAVBAR_ITEM = 'data-bookwise-navbar';
const HIGHLIGHT = 'bookwise-landed';
const HIGHLIGHT_MS = 4000;
const SCAN_MS = 200;
const PANEL_ROOM = '472px'; // the desktop panel's width and margins
const HYDRATED = 'data-bookwise-hydrated'; // set on <html> by docusaurus-plugin-bookwise's client module
const HYDRATED_EVENT = 'bookwise:hydrated';
const HYDRATION_FALLBACK_MS = 2000;
const BLOCKS = 'h1, h2, h3, h4, h5, h6, p, li, pre, table, blockquote';

const STYLES = `
[${CODE_ASK}]{position:absolute;right:.5rem;bottom:.5rem;z-index:1;padding:.1rem .55rem;border:1px solid var(--ifm-color-emphasis-300,#dadde1);border-radius:var(--ifm-global-radius,.4rem);background:var(--ifm-background-surface-color,#fff);color:var(--ifm-font-color-base,#1c1e21);font:600 12px/1.6 var(--ifm-font-family-base,system-ui,sans-serif);cursor:pointer;opacity:.85}
[${CODE_ASK}]:hover,[${CODE_ASK}]:focus-visible{opacity:1;border-color:var(--ifm-color-primary,#2e8555)}
[${NAVBAR_ITEM}]{border:0;background:none;font:inherit;cursor:pointer}
::highlight(${HIGHLIGHT}){background-color:rgb(255 200 0 / .35)}
@media (min-width:1400px){html[data-bookwise-docked] body{margin-right:${PANEL_ROOM}}}
`;

/** Style what the widget adds to the page; returns the undo. */
export function styleHostPage() {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(STYLES);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  return () => {
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((other) => other !== sheet);
  };
}

/**
 * While the panel is open on a wide screen, the page makes room for it, so it covers no passage.
 * The page's text reflows to the new width (taller or shorter above the window), which would move
 * what the reader was looking at; `anchor` (by default the first block of the content in view) is
 * kept where it was on screen.
 *
 * @param {boolean} docked
 * @param {{ contentSelector: string }} config
 * @param {Element | Range | null} [anchor]
 */
export function dock(docked, { contentSelector }, anchor = blockInView(contentSelector)) {
  const before = anchor?.getBoundingClientRect().top;
  document.documentElement.toggleAttribute('data-bookwise-docked', docked);
  const after = anchor?.getBoundingClientRect().top;
  if (before !== undefined && after !== undefined && Math.abs(after - before) >= 1) {
    window.scrollBy(0, after - before);
  }
}

/**
 * The first block of the page's content whose top is in the window (or, in a long block, the one
 * the window's top is in).
 *
 * @param {string} contentSelector
 */
function blockInView(contentSelector) {
  const blocks = document.querySelectorAll(`:is(${contentSelector}) :is(${BLOCKS})`);
  let last = null;
  for (const block of blocks) {
    const { top, bottom } = block.getBoundingClientRect();
    if (bottom <= 0 || (top === 0 && bottom === 0)) continue; // above the window, or not shown
    if (top >= 0) return block;
    last = block; // the window's top is inside it: a later, shorter block may start in view
  }
  return last;
}

/**
 * Keep an "Ask" button on every code block of the content (pages render and change after the
 * widget mounts, so new blocks are looked for as the DOM changes), and a navbar item if wanted.
 *
 * @param {{ contentSelector: string, selection: boolean, navbar: boolean, label: string }} config
 *   `selection: false` (no asking about a passage) means no code-block buttons either.
 * @param {{ ask: (selection: Selection) => void, open: () => void }} actions
 * @returns {() => void}  Stops and removes what was added.
 */
export function decoratePage(config, actions) {
  let timer = 0;
  let stopped = false;
  const scan = () => {
    timer = 0;
    const blocks = config.selection ? document.querySelectorAll(`:is(${config.contentSelector}) pre`) : [];
    for (const pre of blocks) {
      const box = pre.parentElement;
      if (box && !box.querySelector(`:scope > [${CODE_ASK}]`))
        box.append(codeButton(pre, config, actions.ask));
    }
    const items = document.querySelector('.navbar__items--right');
    if (config.navbar && items && !items.querySelector(`[${NAVBAR_ITEM}]`)) {
      const props = {
        class: 'navbar__item navbar__link',
        type: 'button',
        [NAVBAR_ITEM]: '',
        onclick: actions.open,
      };
      items.prepend(h('button', props, config.label));
    }
  };
  const observer = new MutationObserver(() => {
    timer ||= window.setTimeout(scan, SCAN_MS);
  });
  afterHydration(() => {
    if (stopped) return;
    observer.observe(document.body, { childList: true, subtree: true });
    scan();
  });
  return () => {
    stopped = true;
    observer.disconnect();
    clearTimeout(timer);
    document.querySelectorAll(`[${CODE_ASK}], [${NAVBAR_ITEM}]`).forEach((added) => added.remove());
  };
}

/**
 * Call `start` once the site's React has hydrated its server-rendered pages: an element added to them
 * before that makes React throw the markup away and render the page again (error #418). The plugin's
 * client module says when (`data-bookwise-hydrated` on <html>, and an event); a Docusaurus site
 * without the plugin has hydrated a while after `load`; any other site needs no wait.
 *
 * @param {() => void} start
 */
function afterHydration(start) {
  if (!document.getElementById('__docusaurus') || document.documentElement.hasAttribute(HYDRATED)) {
    start();
    return;
  }
  let started = false;
  const once = () => {
    if (!started) start();
    started = true;
  };
  window.addEventListener(HYDRATED_EVENT, once, { once: true });
  const later = () => setTimeout(once, HYDRATION_FALLBACK_MS);
  if (document.readyState === 'complete') later();
  else window.addEventListener('load', later, { once: true });
}

/**
 * @param {Element} pre
 * @param {{ contentSelector: string }} config
 * @param {(selection: Selection) => void} ask
 */
function codeButton(pre, { contentSelector }, ask) {
  const box = /** @type {HTMLElement} */ (pre.parentElement);
  if (getComputedStyle(box).position === 'static') box.style.position = 'relative';
  const onclick = () => {
    const root = pre.closest(contentSelector) ?? document.body;
    const code = /** @type {HTMLElement} */ (pre.querySelector('code') ?? pre);
    // Docusaurus renders each line as its own block ending in a <br>, whose innerText doubles every
    // line break: its lines' own text, joined, is the code as written, indentation and all.
    const lines = [...code.querySelectorAll('.token-line')].map((line) => line.textContent ?? '');
    const text = (lines.length ? lines.join('\n') : code.innerText).replace(/^\s*\n/, '').trimEnd();
    ask({ text, url: location.pathname, headingId: headingIdBefore(root, pre) });
  };
  return h('button', { type: 'button', [CODE_ASK]: '', 'aria-label': 'Ask about this code', onclick }, 'Ask');
}

/**
 * Mark where a citation landed for a few seconds, with the CSS Custom Highlight API (nothing in the
 * page's DOM changes): the passages the answer quoted from that section, found in its text and
 * scrolled to when below the fold; else the whole section, its heading to the next heading.
 *
 * @param {Element} target  The section's heading, scrolled to.
 * @param {string[]} quotes  What the answer quoted from the section (Markdown).
 * @returns {{ marked: Range, box: DOMRect }}  The marked text, and where it shows on screen.
 */
export function highlightLanding(target, quotes) {
  const section = [target];
  for (
    let next = target.nextElementSibling;
    next && !/^H[1-6]$/.test(next.tagName);
    next = next.nextElementSibling
  ) {
    section.push(next);
  }
  const found = findQuotes(section, quotes);
  const marked = document.createRange();
  if (found.length) {
    marked.setStart(found[0].startContainer, found[0].startOffset);
    marked.setEnd(found[found.length - 1].endContainer, found[found.length - 1].endOffset);
    reveal(marked, target);
  } else {
    marked.setStartBefore(target);
    marked.setEndAfter(section[section.length - 1]);
  }
  if ('highlights' in CSS) {
    CSS.highlights.set(HIGHLIGHT, new Highlight(...(found.length ? found : [marked])));
    setTimeout(() => CSS.highlights.delete(HIGHLIGHT), HIGHLIGHT_MS);
  }
  return { marked, box: shownBox(marked, section) };
}

/**
 * Where a range shows: its box cut to the section's blocks. A line of a code block that scrolls
 * sideways reaches far beyond what is shown, and would seem to be under a panel beside the page.
 *
 * @param {Range} range
 * @param {Element[]} section
 */
function shownBox(range, section) {
  const box = range.getBoundingClientRect();
  const blocks = section.map((element) => element.getBoundingClientRect()).filter((b) => b.width > 0);
  if (!blocks.length) return box;
  const left = Math.max(box.left, Math.min(...blocks.map((b) => b.left)));
  const right = Math.min(box.right, Math.max(...blocks.map((b) => b.right)));
  return new DOMRect(left, box.top, Math.max(0, right - left), box.height);
}

/**
 * Scroll a passage that ends below the fold to the top, under the site's fixed navbar (the room its
 * headings keep above themselves when scrolled to).
 *
 * @param {Range} passage
 * @param {Element} heading
 */
function reveal(passage, heading) {
  const box = passage.getBoundingClientRect();
  if (box.bottom <= window.innerHeight) return;
  window.scrollBy(0, box.top - (parseFloat(getComputedStyle(heading).scrollMarginTop) || 0));
}
