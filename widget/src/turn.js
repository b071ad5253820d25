/** One question and its answer, from the request to the reader's vote. */
import { ApiError, sendFeedback, streamChat } from './api.js';
import { plain } from './citations.js';
import { h } from './dom.js';
import { FEEDBACK_ANSWER_CHARS } from './limits.js';
import { quotedIn } from './passages.js';
import { renderMarkdown } from './render.js';
import { closestSections, quotesBlock, sourcesList } from './sources.js';

/**
 * @typedef {import('./page.js').Selection} Selection
 * @typedef {import('./conversation.js').Scope} Scope
 * @typedef {import('./sources.js').Source} Source
 * @typedef {import('./sources.js').Quote} Quote
 * @typedef {import('./api.js').AnswerEvent} AnswerEvent
 * @typedef {import('./api.js').ChatBody} ChatBody
 * @typedef {import('./api.js').Done} Done
 * @typedef {import('./api.js').Meta} Meta
 * @typedef {'streaming' | 'done' | 'error' | 'stopped'} Status
 * @typedef {object} SavedTurn  A finished turn as sessionStorage keeps it.
 * @property {ChatBody} request
 * @property {Selection | undefined} selection
 * @property {string} shown
 * @property {AnswerEvent[]} events  Its tokens as one.
 * @typedef {object} TurnHooks
 * @property {(turn: Turn) => void} retry
 * @property {(turn: Turn, scope: Scope) => void} widen
 * @property {(meta: Meta) => void} meta
 * @property {() => void} update  The turn's DOM changed.
 * @property {(text: string) => void} announce  Say something to screen readers.
 */

/** Why an answer did not help: POST /api/feedback's `reason`. */
const REASONS = [
  ['incorrect', 'Incorrect'],
  ['not_what_i_asked', 'Not what I asked'],
  ['unclear', 'Unclear'],
  ['other', 'Other'],
];

export class Turn {
  /** @type {Status} */
  status = 'streaming';
  /** The answer's Markdown so far. */
  markdown = '';
  /** @type {Source[]} */
  #sources = [];
  /** @type {Meta} */
  #meta = {};
  /** @type {Quote[]} The `done` event's quotes. */
  #quotes = [];
  #frame = 0;
  #controller = new AbortController();
  /** @type {AnswerEvent[]} The events received, replayed when the conversation is restored. */
  #events = [];
  #answer = h('div', { class: 'bw-md', 'data-bw': 'answer' });
  #reply = h('div', { class: 'bw-reply' });
  #apiUrl;
  #hooks;

  /**
   * @param {string} apiUrl
   * @param {ChatBody} request  What was sent.
   * @param {Selection | undefined} selection  What the question is about, if anything.
   * @param {string} shown  The question as the conversation shows it (an action's label).
   * @param {TurnHooks} hooks
   */
  constructor(apiUrl, request, selection, shown, hooks) {
    this.#apiUrl = apiUrl;
    this.#hooks = hooks;
    this.request = request;
    this.selection = selection;
    this.shown = shown;
    const question = h(
      'div',
      { class: 'bw-question' },
      selection && h('blockquote', { class: 'bw-quote' }, selection.text),
      h('p', {}, shown),
    );
    this.element = h('article', { class: 'bw-turn' }, question, this.#reply);
  }

  /** Send the question and render the answer as it streams; resolves with how it ended. */
  async run() {
    this.#start();
    const { signal } = this.#controller;
    try {
      await streamChat(this.#apiUrl, this.request, {
        signal,
        onEvent: (event) => this.#receive(event),
      });
      if (this.status === 'streaming') this.#fail(new ApiError({ message: 'The answer was cut off.' }));
    } catch (error) {
      if (signal.aborted) {
        this.#end('stopped', h('p', { class: 'bw-note', 'data-bw': 'stopped' }, 'Stopped.'));
      } else {
        this.#fail(
          error instanceof ApiError ? error : new ApiError({ message: 'The answer was cut off.' }),
        );
      }
    }
    return this.status;
  }

  stop() {
    this.#controller.abort();
  }

  /**
   * Show an answer from its recorded events, without asking again.
   *
   * @param {AnswerEvent[]} events
   */
  replay(events) {
    const { announce } = this.#hooks;
    this.#hooks.announce = () => {}; // a restored answer is not news
    this.#start();
    for (const event of events) this.#receive(event);
    if (this.status === 'streaming') this.#end('stopped');
    this.#hooks.announce = announce;
  }

  /**
   * The passages (Markdown) this answer quoted from source `n`: its own blockquotes that cite it,
   * then the `done` event's quote of it.
   *
   * @param {number} n
   */
  quotesOf(n) {
    const extra = this.#quotes.filter((quote) => quote.n === n).map((quote) => quote.text);
    return [...quotedIn(this.markdown, n), ...extra];
  }

  /**
   * The turn as sessionStorage keeps it (a finished answer only).
   *
   * @returns {SavedTurn | null}
   */
  saved() {
    if (this.status !== 'done') return null;
    const events = keptEvents(this.#events, this.markdown);
    return { request: this.request, selection: this.selection, shown: this.shown, events };
  }

  #start() {
    this.status = 'streaming';
    this.markdown = '';
    this.#sources = [];
    this.#meta = {};
    this.#controller = new AbortController();
    this.#events = [];
    this.#quotes = [];
    this.element.removeAttribute('data-kind');
    this.#answer.replaceChildren();
    this.#answer.setAttribute('aria-busy', 'true');
    this.#reply.replaceChildren(this.#answer);
    this.#hooks.update();
  }

  /** @param {AnswerEvent} event */
  #receive(event) {
    this.#events.push(event);
    const [name, data] = event;
    if (name === 'meta') {
      this.#meta = data;
      this.#hooks.meta(data);
    } else if (name === 'sources') {
      this.#sources = data.sources;
      if (this.#notCovered) this.#render();
      else if (this.#sources.length) this.#answer.before(sourcesList(this.#sources));
      const titles = this.#sources.map((source) => plain(source.heading || source.title));
      if (titles.length) this.#hooks.announce(`Sources: ${titles.join('; ')}.`);
      this.#hooks.update();
    } else if (name === 'token') {
      this.markdown += data.text;
      this.#frame ||= requestAnimationFrame(() => this.#render());
    } else if (name === 'done') {
      this.#finish(data);
    } else if (name === 'error') {
      this.#fail(new ApiError(data));
    }
  }

  /**
   * Retrieval found the book silent before any answer: the answer is a list of the closest
   * sections, not prose. (A model that declines in its own words keeps its words; see #finish.)
   */
  get #notCovered() {
    return this.#meta.answer_mode === 'not_covered';
  }

  #render() {
    cancelAnimationFrame(this.#frame);
    this.#frame = 0;
    if (this.#notCovered) {
      this.#reply.querySelector('[data-bw=sources]')?.remove();
      this.#answer.replaceChildren(closestSections(this.#sources));
    } else {
      renderMarkdown(this.#answer, this.markdown, this.#sources);
    }
    this.#hooks.update();
  }

  /** @param {Done} done */
  #finish({ answer_kind, quotes = [], widen }) {
    this.element.dataset.kind = answer_kind;
    this.#quotes = quotes;
    const widenButton =
      widen &&
      h(
        'button',
        { class: 'bw-button', 'data-bw': 'widen', onclick: () => this.#hooks.widen(this, widen.scope) },
        widen.label,
      );
    // The model said, in its own words, that the book does not answer: offer the closest sections.
    const declined = answer_kind === 'not_covered' && !this.#notCovered && closestSections(this.#sources);
    this.#end(
      'done',
      declined,
      quotes.length > 0 && quotesBlock(quotes, this.#sources),
      widenButton,
      // "Not in the selection" is the API keeping its word, not an answer to rate down.
      answer_kind !== 'not_in_selection' && this.#feedback(),
    );
    this.#hooks.announce('Answer complete.');
  }

  /** @param {ApiError} error */
  #fail(error) {
    const retry =
      error.retryable &&
      h(
        'button',
        { class: 'bw-button', 'data-bw': 'retry', onclick: () => this.#hooks.retry(this) },
        'Retry',
      );
    if (retry && error.retryAfterS > 0) {
      retry.disabled = true;
      setTimeout(() => (retry.disabled = false), error.retryAfterS * 1000);
    }
    const message = h(
      'div',
      { class: 'bw-error', 'data-bw': 'error', role: 'alert' },
      h('p', {}, error.message),
      retry,
    );
    this.#end('error', message);
  }

  /**
   * Settle the turn, once: a late abort or the stream's end after `done` changes nothing.
   *
   * @param {Status} status
   * @param {...(Node | false | null | undefined | '')} extras  What follows the answer.
   */
  #end(status, ...extras) {
    if (this.status !== 'streaming') return;
    this.status = status;
    this.#render();
    this.#answer.setAttribute('aria-busy', 'false');
    for (const extra of extras) if (extra) this.#reply.append(extra);
    this.#hooks.update();
  }

  #feedback() {
    const requestId = this.#meta.request_id;
    if (!requestId) return null;
    const up = thumbButton('up', 'Yes, helpful', 'Yes');
    const down = thumbButton('down', 'No, not helpful', 'No');
    const status = h('span', { class: 'bw-thanks', role: 'status' });
    const reasons = h(
      'div',
      {
        class: 'bw-reasons',
        'data-bw': 'reasons',
        role: 'group',
        'aria-label': 'What was wrong?',
        hidden: true,
      },
      REASONS.map(([reason, label]) =>
        h('button', { class: 'bw-thumb', 'data-bw': 'reason', 'data-reason': reason }, label),
      ),
    );
    /** @type {HTMLButtonElement[]} */
    const buttons = [up, down, ...reasons.querySelectorAll('button')];
    /**
     * @param {HTMLButtonElement} pressed
     * @param {string} [reason]
     */
    const send = async (pressed, reason) => {
      buttons.forEach((button) => (button.disabled = true));
      try {
        await this.#vote(requestId, reason ? 'down' : 'up', reason);
        pressed.setAttribute('aria-pressed', 'true');
        status.textContent = 'Thanks!';
      } catch {
        buttons.forEach((button) => (button.disabled = false));
        status.textContent = 'Could not send your feedback.';
      }
    };
    const row = h('div', { class: 'bw-feedback' }, h('span', {}, 'Was this helpful?'), up, down, status);
    row.addEventListener('click', (event) => {
      const button = /** @type {Element} */ (event.target).closest('button');
      if (button === up) send(up);
      else if (button === down) {
        // Thumbs-down asks why first; the reason's button sends it.
        down.setAttribute('aria-expanded', 'true');
        reasons.hidden = false;
        /** @type {HTMLElement} */ (reasons.firstElementChild).focus();
      }
    });
    reasons.addEventListener('click', (event) => {
      const button = /** @type {Element} */ (event.target).closest('button');
      if (button) send(down, button.dataset.reason);
    });
    return h('div', {}, row, reasons);
  }

  /**
   * @param {string} requestId  The answer's, from its `meta` event.
   * @param {'up' | 'down'} rating
   * @param {string} [reason]
   */
  #vote(requestId, rating, reason) {
    return sendFeedback(this.#apiUrl, {
      request_id: requestId,
      rating,
      ...(reason && { reason }),
      question: this.shown,
      answer: this.markdown.slice(0, FEEDBACK_ANSWER_CHARS),
      sources: this.#sources.map(({ n, url, title, heading }) => ({ n, url, title, heading })),
    });
  }
}

/**
 * A finished answer's events as kept for a reload: its tokens as one, before its last event (`done`).
 *
 * @param {AnswerEvent[]} events
 * @param {string} markdown  The answer's text: its tokens joined.
 * @returns {AnswerEvent[]}
 */
export function keptEvents(events, markdown) {
  const kept = events.filter(([name]) => name !== 'token');
  kept.splice(-1, 0, ['token', { text: markdown }]);
  return kept;
}

/**
 * @param {'up' | 'down'} rating
 * @param {string} label  Its accessible name, which says what the answer is to.
 * @param {string} text
 */
function thumbButton(rating, label, text) {
  return h('button', { class: 'bw-thumb', 'data-bw': `thumb-${rating}`, 'aria-label': label }, text);
}
