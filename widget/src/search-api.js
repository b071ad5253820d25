/**
 * The search modal's data: the keystroke search request (`GET /api/search/instant`), the marked
 * words of a result as text segments (never HTML), and the reader's recent searches. No DOM here.
 */

/**
 * @typedef {[number, number]} Mark  Start and end offsets of a matched word.
 * @typedef {object} InstantSection
 * @property {string} url  The section's URL, as a citation's (page URL + "#anchor").
 * @property {string} anchor
 * @property {string} heading  "" for a page's intro.
 * @property {Mark[]} heading_marks
 * @property {string[]} breadcrumb
 * @property {string} snippet
 * @property {Mark[]} snippet_marks
 * @typedef {object} InstantPage
 * @property {string} page_url
 * @property {string} title
 * @property {Mark[]} title_marks
 * @property {InstantSection[]} sections
 * @typedef {{ query: string, count: number, dense: boolean, pages: InstantPage[] }} InstantReply
 * @typedef {{ version?: string, locale?: string }} Reader  The reader's page's version and locale.
 */

export const RECENT_KEY = 'bookwise-recent-searches';
export const MAX_RECENT = 5;

/**
 * @param {string} apiUrl
 * @param {string} query  As typed: a trailing space says the last word is complete.
 * @param {Reader} reader
 * @param {number} [limit]
 */
export function instantUrl(apiUrl, query, reader, limit = 8) {
  const url = new URL('/api/search/instant', apiUrl);
  url.searchParams.set('q', query);
  if (reader.version) url.searchParams.set('version', reader.version);
  if (reader.locale) url.searchParams.set('locale', reader.locale);
  url.searchParams.set('limit', String(limit));
  return url.href;
}

/**
 * One keystroke search; `signal` aborts it when the reader has typed on (the request is then stale).
 *
 * @param {string} apiUrl
 * @param {string} query
 * @param {Reader} reader
 * @param {AbortSignal} signal
 * @returns {Promise<InstantReply>}
 */
export async function fetchInstant(apiUrl, query, reader, signal) {
  // A GET with no custom header: a simple cross-origin request, no preflight to wait for.
  const response = await fetch(instantUrl(apiUrl, query, reader), { signal });
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new Error(body?.error?.message ?? `search failed (HTTP ${response.status})`);
  }
  return response.json();
}

/**
 * Text cut at its marks, for `<mark>` elements built as DOM: marks out of order, overlapping or
 * outside the text are dropped.
 *
 * @param {string} text
 * @param {Mark[] | undefined} marks
 * @returns {{ text: string, marked: boolean }[]}
 */
export function segments(text, marks = []) {
  /** @type {{ text: string, marked: boolean }[]} */
  const parts = [];
  let at = 0;
  for (const [start, end] of marks) {
    const whole = Number.isInteger(start) && Number.isInteger(end);
    if (!whole || start < at || end <= start || end > text.length) continue;
    if (start > at) parts.push({ text: text.slice(at, start), marked: false });
    parts.push({ text: text.slice(start, end), marked: true });
    at = end;
  }
  if (at < text.length || !parts.length) parts.push({ text: text.slice(at), marked: false });
  return parts;
}

/**
 * The reader's last searches, newest first, in localStorage (kept across visits, this site only).
 *
 * @param {Pick<Storage, 'getItem' | 'setItem'> | null} storage
 */
export function recentSearches(storage) {
  const read = () => {
    try {
      const kept = JSON.parse(storage?.getItem(RECENT_KEY) ?? '[]');
      return Array.isArray(kept) ? kept.filter((q) => typeof q === 'string').slice(0, MAX_RECENT) : [];
    } catch {
      return [];
    }
  };
  return {
    /** @returns {string[]} */
    list: read,
    /** @param {string} query */
    add(query) {
      const clean = query.trim();
      if (!clean) return;
      const kept = [clean, ...read().filter((q) => q !== clean)].slice(0, MAX_RECENT);
      try {
        storage?.setItem(RECENT_KEY, JSON.stringify(kept));
      } catch {
        // Full or refused storage: the search is not remembered.
      }
    },
  };
}
