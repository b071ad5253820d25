/**
 * The anonymous id this browser's requests carry (`X-Bookwise-Reader`), so the server counts the
 * readers behind one address (a classroom, an office) each as a client of their own instead of one.
 * Random, kept in localStorage for this site only; it names no one and the server stores it nowhere.
 */

const READER_KEY = 'bookwise-reader';
const READER_ID = /^[A-Za-z0-9_-]{16,64}$/; // the shape the server accepts

/** @typedef {Pick<Storage, 'getItem' | 'setItem'>} KeyValueStore */

/** @returns {string} 32 hex digits from the browser's cryptographic random source. */
function randomId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The kept id, or a new one kept for next time; storage that is missing, full or refused (private
 * modes) gives an id for this page load only.
 *
 * @param {KeyValueStore | null} storage
 * @param {() => string} [random]
 * @returns {string}
 */
export function readerIdFrom(storage, random = randomId) {
  try {
    const kept = storage?.getItem(READER_KEY);
    if (kept && READER_ID.test(kept)) return kept;
  } catch {
    // Storage refused: an id for this page load.
  }
  const id = random();
  try {
    storage?.setItem(READER_KEY, id);
  } catch {
    // Full or refused: the id still serves this page load.
  }
  return id;
}

/** @type {string} */
let reader = '';

/** @returns {KeyValueStore | null} */
function siteStorage() {
  try {
    return window.localStorage;
  } catch {
    return null; // a sandboxed frame or blocked storage throws on access
  }
}

/** @returns {Record<string, string>} The header naming this browser's reader. */
export function readerHeaders() {
  if (!reader) reader = readerIdFrom(siteStorage());
  return { 'X-Bookwise-Reader': reader };
}
