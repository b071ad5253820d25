/**
 * The search box's opener, in the widget's own script: Ctrl+K (⌘K), `/` (when not typing in a
 * field), and any element of the page with `data-bookwise-search` (the plugin's navbar button). The
 * modal is a script of its own (`widget-search.js`, beside the widget's), loaded on first use, so
 * pages that never search do not pay for it.
 */

/** @typedef {typeof import('./search-modal.js').SearchModal} SearchModalClass */
/** @typedef {import('./search-modal.js').SearchModal} SearchModal */

import { loadSibling } from './sibling.js';

export const TRIGGER = 'data-bookwise-search';
const READY = '__bookwiseSearch'; // the modal's script calls window[READY](SearchModal)

/** @type {Promise<SearchModalClass> | null} */
let loading = null;

/**
 * Load the modal's script once (again after a failure, at the next call).
 *
 * @param {string} url
 * @returns {Promise<SearchModalClass>}
 */
export function loadSearch(url) {
  loading ??= loadSibling(url, READY, 'search').catch((error) => {
    loading = null; // the next shortcut tries again
    throw error;
  });
  return loading;
}

/**
 * Whether a key press is typing into a field (where `/` is a character, not a shortcut).
 *
 * @param {KeyboardEvent} event
 */
function typing(event) {
  const target = event.composedPath()[0]; // inside a shadow root too (the widget's own question box)
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
}

/**
 * Whether a key press asks for search: Ctrl+K or ⌘K anywhere, `/` outside a field.
 *
 * @param {Pick<KeyboardEvent, 'key' | 'ctrlKey' | 'metaKey' | 'altKey' | 'shiftKey'>} event
 * @param {boolean} inField
 */
export function isSearchShortcut(event, inField) {
  const key = event.key?.toLowerCase();
  if (key === 'k') return (event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey;
  return key === '/' && !inField && !event.ctrlKey && !event.metaKey && !event.altKey;
}

/**
 * Open the modal on its shortcuts and triggers; `create` builds it once its script has loaded.
 *
 * @param {string} url  The modal's script.
 * @param {(Modal: SearchModalClass) => SearchModal} create
 * @param {() => boolean} allowed  False while the widget is hidden on this page.
 * @returns {{ open: (query?: string) => Promise<void>, stop: () => void }}
 */
export function watchSearch(url, create, allowed) {
  /** @type {SearchModal | null} */
  let modal = null;
  const open = async (query = '') => {
    modal ??= create(await loadSearch(url));
    modal.open(query);
  };
  /** @param {KeyboardEvent} event */
  const onKey = (event) => {
    if (event.defaultPrevented || !allowed() || !isSearchShortcut(event, typing(event))) return;
    if (modal?.isOpen) return; // its own box has the keys
    event.preventDefault();
    open().catch(console.warn);
  };
  /** @param {MouseEvent} event */
  const onClick = (event) => {
    const trigger = /** @type {Element} */ (event.target).closest?.(`[${TRIGGER}]`);
    if (!trigger) return;
    event.preventDefault();
    open().catch(console.warn);
  };
  document.addEventListener('keydown', onKey);
  document.addEventListener('click', onClick);
  return {
    open,
    stop() {
      document.removeEventListener('keydown', onKey);
      document.removeEventListener('click', onClick);
      modal?.destroy();
    },
  };
}
