/** The conversation: its turns, what each request carries, and which turn is streaming. */
import { boundHistory, DEFAULT_LIMITS } from './limits.js';
import { pageContext } from './page.js';
import { Turn } from './turn.js';
import { rendered } from './render.js';

/**
 * @typedef {import('./page.js').Selection} Selection
 * @typedef {import('./page.js').PageContext} PageContext
 * @typedef {import('./api.js').ChatBody} ChatBody
 * @typedef {import('./api.js').HistoryTurn} HistoryTurn
 * @typedef {import('./turn.js').SavedTurn} SavedTurn
 * @typedef {import('./limits.js').Limits} Limits
 * @typedef {'idle' | 'streaming' | 'done' | 'error'} State
 * @typedef {'selection' | 'section' | 'book'} Scope
 * @typedef {'ask' | 'explain' | 'example' | 'quiz' | 'summarize_page' | 'quiz_page'} Action
 * @typedef {{ selection?: Selection, scope?: Scope, action?: Action, page?: PageContext }} AskOptions
 * @typedef {{ action: Action, selection?: Selection, page: PageContext }} Quiz
 * @typedef {object} ConversationHooks
 * @property {(turn: Turn) => void} add  A new turn is to be shown.
 * @property {(state: State) => void} state
 * @property {(meta: import('./api.js').Meta) => void} meta
 * @property {() => void} update
 * @property {(quiz: Quiz | null) => void} quiz  A quiz began (the next reply answers it) or ended.
 * @property {(text: string) => void} announce  Say something to screen readers.
 */

const DEFAULT_SELECTION_QUESTION = 'Explain this passage.';
const HISTORY_TURNS = 6; // the widget's own cap; the server's (and its turn length) come from /api/config
const STORE_KEY = 'bookwise-conversation';
const STORED_TURNS = 20;

/** What each study action asks, in the reader's words (the API's `action` says what to do). */
export const ACTION_QUESTIONS = {
  explain: 'Explain this simply.',
  example: 'Give an example of this.',
  quiz: 'Quiz me on this.',
  summarize_page: 'Summarize this page.',
  quiz_page: 'Quiz me on this section.',
};
/** Explain's words without a model, which shows where the book introduces the passage's terms. */
const EXPLAIN_WITHOUT_MODEL = 'What do its terms mean in the book?';

export class Conversation {
  /** @type {Turn[]} */
  #turns = [];
  /** @type {Turn | null} */
  #current = null;
  #apiUrl;
  #hooks;
  /** @type {Promise<Limits>} */
  #limits;
  /** @type {Quiz | null} */
  #quiz = null;
  #contentSelector;
  /** @type {import('./limits.js').Answers | null} Who answers, once known. */
  answers = null;

  /**
   * @param {string} apiUrl
   * @param {ConversationHooks} hooks
   * @param {Promise<Limits>} [limits]  The API's, once known.
   * @param {string} [contentSelector]  The page's content, whose section in view is sent.
   */
  constructor(apiUrl, hooks, limits = Promise.resolve(DEFAULT_LIMITS), contentSelector = '') {
    this.#apiUrl = apiUrl;
    this.#contentSelector = contentSelector;
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
  async ask(question, { selection, scope, action, page } = {}) {
    // A reply typed during a quiz answers it: same action, same passage or page, with the history.
    const quiz = !action && !selection ? this.#quiz : null;
    action ??= quiz?.action;
    selection ??= quiz?.selection;
    // An action's button says what to do: its request needs no question (an empty one also keeps a
    // new quiz from being taken for the answer to the last one); the conversation shows its label.
    const words = action === 'explain' && this.answers === 'extractive' ? EXPLAIN_WITHOUT_MODEL : '';
    const label = action && action !== 'ask' && !quiz ? words || ACTION_QUESTIONS[action] : '';
    const text = question.trim() || (label || !selection ? '' : DEFAULT_SELECTION_QUESTION);
    if (!text && !label) return 'empty';
    const limits = await this.#limits;
    const request = this.#request(text, selection, scope, limits);
    if (action && action !== 'ask') request.action = action;
    if (action === 'summarize_page') delete request.page.heading_id; // the whole page
    const asked = quiz ? quiz.page : page;
    if (asked) request.page = asked;
    const turn = this.#turn(request, selection, text || label);
    this.#turns.push(turn);
    this.#hooks.add(turn);
    this.#setQuiz(
      action === 'quiz' || action === 'quiz_page' ? { action, selection, page: request.page } : null,
    );
    return this.#run(turn);
  }

  /**
   * @param {ChatBody} request
   * @param {Selection | undefined} selection
   * @param {string} shown  The question as the conversation shows it.
   */
  #turn(request, selection, shown) {
    return new Turn(this.#apiUrl, request, selection, shown, {
      retry: (again) => this.#run(again),
      widen: (narrow, wider) =>
        this.ask(narrow.request.question, { selection: narrow.selection, scope: wider }),
      meta: this.#hooks.meta,
      update: this.#hooks.update,
      announce: this.#hooks.announce,
    });
  }

  /** @param {Quiz | null} quiz */
  #setQuiz(quiz) {
    this.#quiz = quiz;
    this.#hooks.quiz(quiz);
  }

  /** Skip to a new question of the quiz (an empty question asks one), on its passage or page. */
  nextQuestion() {
    const quiz = this.#quiz;
    return quiz ? this.ask('', quiz) : Promise.resolve('empty');
  }

  endQuiz() {
    this.#setQuiz(null);
    this.#save();
  }

  get empty() {
    return this.#turns.length === 0;
  }

  /**
   * What the answer holding `link` quoted from the source it links to (a citation or a source of
   * the answer); none for another link.
   *
   * @param {Element} link
   */
  quotesFor(link) {
    const n = Number(link.getAttribute('data-n'));
    const turn = this.#turns.find((candidate) => candidate.element.contains(link));
    return n && turn ? turn.quotesOf(n) : [];
  }

  /**
   * Bring back the conversation of this tab (kept in sessionStorage across reloads): its answers
   * are replayed from their recorded events, not asked again.
   */
  restore() {
    /** @type {{ turns?: SavedTurn[], quiz?: Quiz | null } | null} */
    let saved = null;
    try {
      saved = JSON.parse(sessionStorage.getItem(STORE_KEY) || 'null');
    } catch {
      // No storage (a privacy mode) or a damaged entry: start afresh.
    }
    for (const { request, selection, shown, events } of saved?.turns ?? []) {
      const turn = this.#turn(request, selection, shown ?? request.question);
      this.#turns.push(turn);
      this.#hooks.add(turn);
      turn.replay(events);
    }
    if (saved?.quiz) this.#setQuiz(saved.quiz);
  }

  #save() {
    const turns = this.#turns.flatMap((turn) => turn.saved() ?? []).slice(-STORED_TURNS);
    try {
      sessionStorage.setItem(STORE_KEY, JSON.stringify({ turns, quiz: this.#quiz }));
    } catch {
      // Full or unavailable: the conversation still lives until the tab reloads.
    }
  }

  /** @param {Turn} turn */
  async #run(turn) {
    this.#current?.stop();
    this.#current = turn;
    this.#hooks.state('streaming');
    const status = await turn.run();
    await rendered(); // the first answer may have ended before the Markdown renderer arrived
    this.#save();
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
    this.#setQuiz(null);
    this.#save();
  }

  /**
   * The ChatBody for a question; only fields with a value, as the API refuses what it does not know.
   *
   * @param {string} question
   * @param {Selection | undefined} selection
   * @param {Scope | undefined} scope
   * @param {Limits} limits
   */
  #request(question, selection, scope, limits) {
    const page = pageContext(selection, this.#contentSelector);
    /** @type {ChatBody} */
    const body = { question, mode: selection ? 'selected_text' : 'normal', page };
    if (selection) body.selected_text = selection.text.slice(0, limits.max_selection_chars);
    if (scope) body.scope = scope;
    const history = this.#history(limits);
    if (history.length) body.history = history;
    return body;
  }

  /**
   * The last answered exchanges, as the API's `history`, within its limits.
   *
   * @param {Limits} limits
   */
  #history(limits) {
    /** @type {HistoryTurn[]} */
    const turns = this.#turns
      .filter((turn) => turn.status === 'done' && turn.markdown)
      // Each turn says which action produced it: a quiz's answer follows the quiz's question.
      .flatMap((turn) => [
        { role: 'user', content: turn.shown, ...(turn.request.action && { action: turn.request.action }) },
        {
          role: 'assistant',
          content: turn.markdown,
          ...(turn.request.action && { action: turn.request.action }),
        },
      ]);
    return boundHistory(turns, HISTORY_TURNS, limits);
  }
}
