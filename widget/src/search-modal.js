/**
 * The search modal: results as the reader types, by page and heading, with the matched words
 * marked; ↑/↓ walk the rows, Enter opens one, Esc closes. The last row asks the chat the query.
 * A WAI-ARIA combobox: the box owns a listbox of options and names the active one
 * (`aria-activedescendant`), and a live region says how many results there are.
 *
 * The search the reader settled on is reported once (`POST /api/search/instant/log`), not every
 * keystroke: the query last searched when a result is opened, the query asked, or the modal closed,
 * with the result opened if one was. The server logs it when the site owner turned the log on.
 */
import css from './search.css';
import { h } from './dom.js';
import { readerHeaders } from './reader.js';
import { fetchInstant, recentSearches, segments } from './search-api.js';

/**
 * @typedef {import('./search-api.js').InstantReply} InstantReply
 * @typedef {import('./search-api.js').Reader} Reader
 * @typedef {object} SearchHooks
 * @property {string} apiUrl
 * @property {() => Reader} reader  The page's version and locale, read when a search starts.
 * @property {(url: string) => void} land  Follow a result to its heading, as a citation is followed.
 * @property {(query: string) => void} ask  Ask the chat the query.
 * @typedef {{ element: HTMLElement, activate: () => void }} Row
 */

const DEBOUNCE_MS = 90;
let ids = 0;

export class SearchModal {
  #root;
  #hooks;
  #recent;
  /** @type {Row[]} */
  #rows = [];
  #active = -1;
  /** @type {AbortController | null} */
  #pending = null;
  #timer = 0;
  /** @type {Element | null} */
  #returnFocus = null;
  #id = `bw-search-${++ids}`;
  /** The query whose results (or none) the reader sees; "" before any, or once it is reported. */
  #settled = '';
  #backdrop;
  #input;
  #list;
  #status;

  /**
   * @param {ShadowRoot} root  The widget's shadow root: the modal lives there, styled apart from the site.
   * @param {SearchHooks} hooks
   */
  constructor(root, hooks) {
    this.#root = root;
    this.#hooks = hooks;
    this.#recent = recentSearches(storage());
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
    this.#input = h('input', {
      type: 'search',
      class: 'bw-search-input',
      role: 'combobox',
      'aria-autocomplete': 'list',
      'aria-expanded': 'false',
      'aria-controls': `${this.#id}-list`,
      'aria-label': 'Search the book',
      placeholder: 'Search the book',
      autocomplete: 'off',
      spellcheck: 'false',
      enterkeyhint: 'search',
      oninput: () => this.#typed(),
      onkeydown: (event) => this.#key(/** @type {KeyboardEvent} */ (event)),
    });
    this.#list = h('div', {
      id: `${this.#id}-list`,
      class: 'bw-search-list',
      role: 'listbox',
      'aria-label': 'Results',
    });
    this.#status = h('div', {
      class: 'bw-sr',
      'data-bw': 'search-count',
      role: 'status',
      'aria-live': 'polite',
    });
    const close = h(
      'button',
      { type: 'button', class: 'bw-search-close', 'aria-label': 'Close search', onclick: () => this.close() },
      'Esc',
    );
    const dialog = h(
      'div',
      { class: 'bw-search', role: 'dialog', 'aria-modal': 'true', 'aria-label': 'Search the book' },
      h('div', { class: 'bw-search-bar' }, this.#input, close),
      this.#list,
      this.#status,
      h('p', { class: 'bw-search-help', 'aria-hidden': 'true' }, '↑↓ to move · Enter to open · Esc to close'),
    );
    this.#backdrop = h(
      'div',
      {
        class: 'bw-search-backdrop',
        'data-bw': 'search',
        hidden: true,
        onmousedown: (event) => {
          if (event.target === this.#backdrop) this.close();
        },
        onkeydown: (event) => this.#trap(/** @type {KeyboardEvent} */ (event)),
      },
      dialog,
    );
    root.append(this.#backdrop);
  }

  get isOpen() {
    return !this.#backdrop.hidden;
  }

  /** @param {string} [query]  What the box holds: a recent search chosen; empty for a new search. */
  open(query = '') {
    if (!this.isOpen) {
      this.#returnFocus = document.activeElement;
      this.#backdrop.hidden = false;
      this.#settled = '';
    }
    this.#input.value = query;
    this.#input.focus();
    this.#input.select();
    this.#typed(true);
  }

  close() {
    if (!this.isOpen) return;
    this.#report(null, false); // left with no result opened (a no-op once one was)
    this.#pending?.abort();
    clearTimeout(this.#timer);
    this.#backdrop.hidden = true;
    this.#input.setAttribute('aria-expanded', 'false');
    if (this.#returnFocus instanceof HTMLElement) this.#returnFocus.focus({ preventScroll: true });
    this.#returnFocus = null;
  }

  destroy() {
    this.close();
    this.#backdrop.remove();
  }

  /** @param {boolean} [now] */
  #typed(now = false) {
    clearTimeout(this.#timer);
    this.#pending?.abort(); // the reader typed on: the answer to the old query is stale
    const query = this.#input.value;
    if (!query.trim()) {
      this.#showRecent();
      return;
    }
    this.#timer = window.setTimeout(() => this.#search(query), now ? 0 : DEBOUNCE_MS);
  }

  /** @param {string} query */
  async #search(query) {
    const pending = new AbortController();
    this.#pending = pending;
    this.#list.setAttribute('aria-busy', 'true');
    try {
      const reply = await fetchInstant(this.#hooks.apiUrl, query, this.#hooks.reader(), pending.signal);
      if (pending.signal.aborted) return;
      this.#showResults(query, reply);
    } catch (error) {
      if (pending.signal.aborted) return;
      this.#showRows(query, [], /** @type {Error} */ (error).message);
    } finally {
      if (this.#pending === pending) this.#list.removeAttribute('aria-busy');
    }
  }

  #showRecent() {
    this.#settled = '';
    const recent = this.#recent.list();
    const rows = recent.map((query) =>
      this.#row(h('span', { class: 'bw-search-recent' }, query), () => this.open(query), 'recent'),
    );
    const title = h('div', { class: 'bw-search-page', role: 'presentation' }, 'Recent searches');
    this.#render(rows.length ? [title, ...rows.map((row) => row.element)] : [], rows);
    this.#status.textContent = '';
  }

  /**
   * @param {string} query
   * @param {InstantReply} reply
   */
  #showResults(query, reply) {
    /** @type {Row[]} */
    const rows = [];
    const groups = reply.pages.map((page, number) => {
      const label = `${this.#id}-page-${number}`;
      const sectionRows = page.sections.map((section) => {
        // A page's intro has no heading of its own: its row is named by the page's title.
        const heading = section.heading
          ? marked(section.heading, section.heading_marks)
          : marked(page.title, page.title_marks);
        const snippet = section.snippet
          ? h('span', { class: 'bw-search-snippet' }, marked(section.snippet, section.snippet_marks))
          : null;
        const row = this.#row(
          h('span', { class: 'bw-search-hit' }, h('span', { class: 'bw-search-heading' }, heading), snippet),
          () => this.#land(query, section.url),
          'result',
        );
        row.element.dataset.url = section.url;
        rows.push(row);
        return row.element;
      });
      return h(
        'div',
        { role: 'group', 'aria-labelledby': label, class: 'bw-search-group' },
        h(
          'div',
          { id: label, class: 'bw-search-page', role: 'presentation' },
          marked(page.title, page.title_marks),
        ),
        sectionRows,
      );
    });
    this.#showRows(query, groups, '', rows, reply.count);
  }

  /**
   * @param {string} query
   * @param {HTMLElement[]} groups
   * @param {string} error
   * @param {Row[]} [rows]
   * @param {number} [count]
   */
  #showRows(query, groups, error, rows = [], count = 0) {
    this.#settled = error ? '' : query;
    const ask = this.#row(
      h('span', { class: 'bw-search-ask' }, 'Ask about ', h('q', {}, query.trim())),
      () => this.#ask(query),
      'ask',
    );
    const text = error || (count ? '' : `No sections match “${query.trim()}”.`);
    const note = text ? h('p', { class: 'bw-search-empty', role: 'presentation' }, text) : null;
    this.#render([...groups, note, ask.element].filter((e) => e !== null), [...rows, ask]);
    this.#status.textContent = error || (count === 1 ? '1 result' : `${count} results`);
  }

  /**
   * @param {(HTMLElement | null)[]} elements
   * @param {Row[]} rows
   */
  #render(elements, rows) {
    this.#list.replaceChildren(...elements.filter((e) => e !== null));
    this.#rows = rows;
    this.#input.setAttribute('aria-expanded', String(rows.length > 0));
    this.#select(rows.length ? 0 : -1);
  }

  /**
   * @param {HTMLElement} content
   * @param {() => void} activate
   * @param {string} kind
   * @returns {Row}
   */
  #row(content, activate, kind) {
    const element = h(
      'div',
      {
        role: 'option',
        id: `${this.#id}-option-${++ids}`,
        class: 'bw-search-option',
        'data-kind': kind,
        'aria-selected': 'false',
        onmousedown: (event) => event.preventDefault(), // the box keeps the focus
        onclick: () => activate(),
        onmousemove: () => this.#select(this.#rows.findIndex((row) => row.element === element)),
      },
      content,
    );
    return { element, activate };
  }

  /** @param {number} index */
  #select(index) {
    this.#rows[this.#active]?.element.setAttribute('aria-selected', 'false');
    this.#active = index;
    const row = this.#rows[index];
    if (!row) {
      this.#input.removeAttribute('aria-activedescendant');
      return;
    }
    row.element.setAttribute('aria-selected', 'true');
    this.#input.setAttribute('aria-activedescendant', row.element.id);
    row.element.scrollIntoView({ block: 'nearest' });
  }

  /** @param {KeyboardEvent} event */
  #key(event) {
    const count = this.#rows.length;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      if (!count) return;
      const step = event.key === 'ArrowDown' ? 1 : -1;
      this.#select((this.#active + step + count) % count);
    } else if (event.key === 'Enter') {
      event.preventDefault();
      clearTimeout(this.#timer);
      this.#rows[this.#active]?.activate();
    } else if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      this.close();
    }
  }

  /**
   * Tab stays in the dialog (its box and its close button); Esc closes from either.
   *
   * @param {KeyboardEvent} event
   */
  #trap(event) {
    if (event.key === 'Escape') {
      event.preventDefault();
      this.close();
      return;
    }
    if (event.key !== 'Tab') return;
    const stops = [...this.#backdrop.querySelectorAll('input, button')];
    const at = stops.indexOf(/** @type {Element} */ (this.#root.activeElement));
    event.preventDefault();
    const next = stops[(at + (event.shiftKey ? -1 : 1) + stops.length) % stops.length];
    if (next instanceof HTMLElement) next.focus();
  }

  /**
   * @param {string} query
   * @param {string} url
   */
  #land(query, url) {
    this.#report(url, false);
    this.#recent.add(query);
    this.close();
    this.#hooks.land(url);
  }

  /** @param {string} query */
  #ask(query) {
    const question = query.trim();
    if (!question) return;
    this.#report(null, true);
    this.#recent.add(question);
    this.#returnFocus = null; // the chat panel takes the focus
    this.close();
    this.#hooks.ask(question);
  }

  /**
   * The settled search, once: fire and forget (a lost report costs the log one row, never the reader).
   *
   * @param {string | null} opened  The result's URL.
   * @param {boolean} asked
   */
  #report(opened, asked) {
    const query = this.#settled;
    this.#settled = '';
    const body = settledSearch(query, opened, asked, this.#hooks.reader(), window.location.href);
    if (!body) return;
    fetch(new URL('/api/search/instant/log', this.#hooks.apiUrl).href, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...readerHeaders() },
      body: JSON.stringify(body),
      keepalive: true, // opening a result may leave the page
    }).catch(() => {});
  }
}

/**
 * The body of a settled search's report, or null when there is nothing to report (no query).
 *
 * @param {string} query
 * @param {string | null} opened
 * @param {boolean} asked
 * @param {Reader} reader
 * @param {string} pageUrl
 */
export function settledSearch(query, opened, asked, reader, pageUrl) {
  const text = query.trim();
  if (!text) return null;
  return {
    query: text,
    opened,
    asked,
    page_url: pageUrl,
    ...(reader.version ? { version: reader.version } : {}),
    ...(reader.locale ? { locale: reader.locale } : {}),
  };
}

/**
 * @param {string} text
 * @param {import('./search-api.js').Mark[]} marks
 */
function marked(text, marks) {
  return segments(text, marks).map((part) => (part.marked ? h('mark', {}, part.text) : part.text));
}

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null; // refused (a sandboxed frame, blocked storage): no recent searches
  }
}
