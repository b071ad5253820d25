/**
 * The limits the API enforces on a request, read from the API itself (`GET /api/config`) so that
 * an operator who lowers one (BOOKWISE_MAX_HISTORY_CHARS…) does not make every widget request fail;
 * the same reply tells the server's version.
 */

/**
 * @typedef {object} Limits
 * @property {number} max_question_chars
 * @property {number} max_selection_chars
 * @property {number} max_history_turns
 * @property {number} max_history_chars
 */

const CONFIG_TIMEOUT_MS = 5000;

/**
 * The server's defaults (BOOKWISE_MAX_QUESTION_CHARS…): used until, or if never, its own limits are
 * known. The server's settings are their source; tests/widget/test_widget_limits.py checks these against them.
 */
export const DEFAULT_LIMITS = Object.freeze({
  max_question_chars: 2000,
  max_selection_chars: 4000,
  max_history_turns: 10,
  max_history_chars: 4000,
});

/**
 * The longest answer a vote carries (POST /api/feedback refuses longer ones). Not in /api/config: the
 * server's FeedbackBody is its source, and tests/widget/test_widget_limits.py checks this against it.
 */
export const FEEDBACK_ANSWER_CHARS = 32000;

/**
 * @typedef {object} ServerConfig
 * @property {Limits} limits
 * @property {string | null} version  The server's Bookwise version (null: an older server, or none known).
 * @property {Answers | null} answers  Who answers: a model, or the book's own words (null: not known).
 * @typedef {'llm' | 'extractive'} Answers
 */

/**
 * The API's limits and version; the default limits when it cannot tell (an older server, a network
 * error).
 *
 * @param {string} apiUrl
 * @param {typeof fetch} [get]
 * @returns {Promise<ServerConfig>}
 */
export async function fetchServerConfig(apiUrl, get = fetch) {
  try {
    const signal = AbortSignal.timeout(CONFIG_TIMEOUT_MS);
    const response = await get(`${apiUrl}/api/config`, { credentials: 'omit', signal });
    const served = response.ok ? await response.json() : null;
    /** @type {Record<string, number>} */
    const limits = { ...DEFAULT_LIMITS };
    for (const name of Object.keys(DEFAULT_LIMITS)) {
      const value = served?.limits?.[name];
      if (Number.isInteger(value) && value >= 0) limits[name] = value;
    }
    const version = typeof served?.version === 'string' ? served.version : null;
    return { limits: /** @type {Limits} */ (limits), version, answers: answersOf(served?.answers) };
  } catch {
    return { limits: DEFAULT_LIMITS, version: null, answers: null };
  }
}

/**
 * Who answers, from `/api/config`'s `answers` or a `meta` event's `answer_mode`; null for anything
 * else (`not_covered` says nothing about it).
 *
 * @param {unknown} mode
 * @returns {Answers | null}
 */
export function answersOf(mode) {
  return mode === 'llm' || mode === 'extractive' ? mode : null;
}

/**
 * The API's limits; the defaults when it cannot tell.
 *
 * @param {string} apiUrl
 * @param {typeof fetch} [get]
 * @returns {Promise<Limits>}
 */
export async function fetchLimits(apiUrl, get = fetch) {
  return (await fetchServerConfig(apiUrl, get)).limits;
}

/**
 * The longest selection to send: the server's limit, or the owner's lower one (`data-max-selection`).
 *
 * @param {number} ownerCap  0: the owner set none.
 * @param {Limits} limits
 */
export function selectionCap(ownerCap, limits) {
  return ownerCap > 0 ? Math.min(ownerCap, limits.max_selection_chars) : limits.max_selection_chars;
}

/**
 * The last `most` turns of a history, each cut to the server's longest turn.
 *
 * @template {{ content: string }} T
 * @param {T[]} turns
 * @param {number} most  The widget's own cap (fewer turns keep requests small).
 * @param {Limits} limits
 * @returns {T[]}
 */
export function boundHistory(turns, most, limits) {
  const kept = Math.min(most, limits.max_history_turns);
  return (kept > 0 ? turns.slice(-kept) : []).map((turn) => ({
    ...turn,
    content: turn.content.slice(0, limits.max_history_chars),
  }));
}
