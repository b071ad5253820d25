/** The conversation: its turns, what each request carries, and which turn is streaming. */
import { boundHistory, DEFAULT_LIMITS } from './limits.js';
import { pageContext } from './page.js';
import { Turn } from './turn.js';

/**
 * @typedef {import('./page.js').Selection} Selection
 * @typedef {'idle' | 'streaming' | 'done' | 'error'} State
 * @typedef {'selection' | 'section' | 'book'} Scope
 * @typedef {{ selection?: Selection, scope?: Scope }} AskOptions
 * @typedef {object} ConversationHooks
 * @property {(turn: Turn) => void} add  A new turn is to be shown.
 * @property {(state: State) => void} state
 * @property {(meta: Record<string, any>) => void} meta
 * @property {() => void} update
 */

const DEFAULT_SELECTION_QUESTION = 'Explain this passage.';
const HISTORY_TURNS = 6; // the widget's own cap; the server's (and its turn length) come from /api/config

export class Conversation {
  /** @type {Turn[]} */
  #turns = [];
  /** @type {Turn | null} */
  #current = null;
  #apiUrl;
  #hooks;
  /** @type {Promise<import('./limits.js').Limits>} */
  #limits;

  /**
   * @param {string} apiUrl
   * @param {ConversationHooks} hooks
   * @param {Promise<import('./limits.js').Limits>} [limits]  The API's, once known.
   */
  constructor(apiUrl, hooks, limits = Promise.resolve(DEFAULT_LIMITS)) {
    this.#apiUrl = apiUrl;
    this.#hooks = hooks;
    this.#limits = limits;
  }

  /**
   * Ask a question (about a selection, if given); a streaming answer is stopped first.
   *
   * @param {string} question
   * @param {AskOptions} [options]
   * @returns {Promise<import('./turn.js').Status | 'empty'>}  How the answer ended.
   */
  async ask(question, { selection, scope } = {}) {
    const text = question.trim() || (selection ? DEFAULT_SELECTION_QUESTION : '');
    if (!text) return 'empty';
    const limits = await this.#limits;
    const turn = new Turn(this.#apiUrl, this.#request(text, selection, scope, limits), selection, {
      retry: (again) => this.#run(again),
      widen: (narrow, wider) =>
        this.ask(narrow.request.question, { selection: narrow.selection, scope: wider }),
      meta: this.#hooks.meta,
      update: this.#hooks.update,
    });
    this.#turns.push(turn);
    this.#hooks.add(turn);
    return this.#run(turn);
  }

  /** @param {Turn} turn */
  async #run(turn) {
    this.#current?.stop();
    this.#current = turn;
    this.#hooks.state('streaming');
    const status = await turn.run();
    if (this.#current === turn) {
      this.#current = null;
      this.#hooks.state(status === 'stopped' ? 'idle' : status);
    }
    return status;
  }

  stop() {
    this.#current?.stop();
  }

  clear() {
    this.stop();
    this.#turns = [];
  }

  /**
   * The ChatBody for a question; only fields with a value, as the API refuses what it does not know.
   *
   * @param {string} question
   * @param {Selection | undefined} selection
   * @param {string | undefined} scope
   * @param {import('./limits.js').Limits} limits
   */
  #request(question, selection, scope, limits) {
    /** @type {Record<string, any>} */
    const body = { question, mode: selection ? 'selected_text' : 'normal', page: pageContext(selection) };
    if (selection) body.selected_text = selection.text.slice(0, limits.max_selection_chars);
    if (scope) body.scope = scope;
    const history = this.#history(limits);
    if (history.length) body.history = history;
    return body;
  }

  /**
   * The last answered exchanges, as the API's `history`, within its limits.
   *
   * @param {import('./limits.js').Limits} limits
   */
  #history(limits) {
    const turns = this.#turns
      .filter((turn) => turn.status === 'done' && turn.markdown)
      .flatMap((turn) => [
        { role: 'user', content: turn.request.question },
        { role: 'assistant', content: turn.markdown },
      ]);
    return boundHistory(turns, HISTORY_TURNS, limits);
  }
}
