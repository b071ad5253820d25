/** What the widget reads from the host page: where the reader is, and what they selected. */

const SELECTION_DEBOUNCE_MS = 150;
const NAVIGATE_EVENT = 'bookwise:navigate'; // dispatched by docusaurus-plugin-bookwise's client module
const HEADINGS = 'h1[id], h2[id], h3[id], h4[id], h5[id], h6[id]';

/**
 * @typedef {{ url: string, heading_id?: string, version?: string, locale?: string }} PageContext
 * @typedef {{ text: string, url: string, headingId?: string }} Selection
 * @typedef {Selection & { rect: DOMRect }} PlacedSelection  A selection and its box on screen.
 */

/**
 * The page as the API's `page` field wants it; absent values are left out, not sent empty.
 *
 * @param {Selection} [selection]  Its page and section, when the question is about a selection.
 * @returns {PageContext}
 */
export function pageContext(selection, contentSelector = '') {
  /** @type {PageContext} */
  const page = { url: selection?.url ?? location.pathname };
  const version = metaContent('docusaurus_version');
  const locale = metaContent('docusaurus_locale') || document.documentElement.lang;
  const headingId = selection ? selection.headingId : headingInView(contentSelector);
  if (headingId) page.heading_id = headingId;
  if (version) page.version = version;
  if (locale) page.locale = locale;
  return page;
}

/** @param {string} name */
function metaContent(name) {
  return document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') || '';
}

/**
 * The id of the last heading at or before `node` in document order, within `root`: the section a
 * selection starting at `node` belongs to.
 *
 * @param {Element} root
 * @param {Node} node
 */
export function headingIdBefore(root, node) {
  let id;
  for (const heading of root.querySelectorAll(HEADINGS)) {
    // FOLLOWING is also set when `node` is inside the heading.
    if (!(heading.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING)) break;
    id = heading.id;
  }
  return id;
}

/**
 * The section the reader is reading: the last heading of the content above the top third of the
 * window. Follows the reader as they scroll and navigate.
 *
 * @param {string} contentSelector
 */
function headingInView(contentSelector) {
  const root = contentSelector && document.querySelector(contentSelector);
  let id;
  for (const heading of root ? root.querySelectorAll(HEADINGS) : []) {
    if (heading.getBoundingClientRect().top > window.innerHeight / 3) break;
    id = heading.id;
  }
  return id;
}

/**
 * Report the reader's selection inside the content, with where it sits on screen, or null when
 * there is none. Checked once a drag ends and the selection has settled.
 *
 * @param {{ contentSelector: string, maxSelection: number }} config
 * @param {(selection: PlacedSelection | null) => void} onChange
 * @returns {() => void}  Stops watching.
 */
export function watchSelection(config, onChange) {
  let timer = 0;
  let dragging = false;
  const check = () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => dragging || onChange(currentSelection(config)), SELECTION_DEBOUNCE_MS);
  };
  const startDragging = () => {
    dragging = true;
  };
  const stopDragging = () => {
    dragging = false;
    check();
  };
  /** @type {[string, EventListener][]} */
  const listeners = [
    ['mousedown', startDragging],
    ['mouseup', stopDragging],
    ['keyup', check],
    ['selectionchange', check],
  ];
  for (const [name, listener] of listeners) document.addEventListener(name, listener);
  return () => {
    clearTimeout(timer);
    for (const [name, listener] of listeners) document.removeEventListener(name, listener);
  };
}

/**
 * @param {{ contentSelector: string, maxSelection: number }} config
 * @returns {PlacedSelection | null}
 */
function currentSelection({ contentSelector, maxSelection }) {
  const selection = document.getSelection();
  if (!selection || selection.isCollapsed || !selection.rangeCount) return null;
  const range = selection.getRangeAt(0);
  const common = range.commonAncestorContainer;
  const root = (common instanceof Element ? common : common.parentElement)?.closest(contentSelector);
  const text = selection.toString().trim().slice(0, maxSelection);
  if (!root || !text) return null;
  return {
    text,
    url: location.pathname,
    headingId: headingIdBefore(root, range.startContainer),
    rect: range.getBoundingClientRect(),
  };
}

/**
 * Call `onChange` when the page's path changes. Single-page apps change it with pushState, which
 * fires no event, and mostly on a click; so the path is compared after each click, on popstate and
 * on the plugin's `bookwise:navigate` event.
 *
 * @param {(pathname: string) => void} onChange
 * @returns {() => void}  Stops watching.
 */
export function watchRoute(onChange) {
  let pathname = location.pathname;
  const check = () => {
    if (location.pathname === pathname) return;
    pathname = location.pathname;
    onChange(pathname);
  };
  const afterClick = () => setTimeout(check);
  window.addEventListener('popstate', check);
  // The Docusaurus plugin's client module reports every client-side route change, including those
  // no click made (a search result opened with the keyboard, a redirect in the site's own code).
  window.addEventListener(NAVIGATE_EVENT, check);
  document.addEventListener('click', afterClick);
  return () => {
    window.removeEventListener('popstate', check);
    window.removeEventListener(NAVIGATE_EVENT, check);
    document.removeEventListener('click', afterClick);
  };
}
