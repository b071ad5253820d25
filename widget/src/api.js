import { readerHeaders } from './reader.js';
import { createSseParser } from './sse.js';

/**
 * What the widget sends to the API and reads back from it (the server's side is
 * backend/bookwise/api/schemas.py and the answer's events); fields the widget does not use are left out.
 *
 * @typedef {import('./page.js').PageContext} PageContext
 * @typedef {import('./conversation.js').Scope} Scope
 * @typedef {import('./conversation.js').Action} Action
 * @typedef {import('./sources.js').Source} Source
 * @typedef {import('./sources.js').Quote} Quote
 * @typedef {{ role: 'user' | 'assistant', content: string, action?: Action }} HistoryTurn
 * @typedef {object} ChatBody  POST /api/chat's body: only fields with a value (the API refuses unknown ones).
 * @property {string} question
 * @property {'normal' | 'selected_text'} mode
 * @property {PageContext} page
 * @property {string} [selected_text]
 * @property {Scope} [scope]
 * @property {Action} [action]
 * @property {HistoryTurn[]} [history]
 * @typedef {object} Meta  The `meta` event.
 * @property {string} [request_id]
 * @property {string} [answer_mode]  "not_covered" when retrieval found the book silent.
 * @property {string} [index_version]
 * @typedef {object} Done  The `done` event.
 * @property {string} answer_kind
 * @property {Quote[]} [quotes]
 * @property {{ scope: Scope, label: string } | null} [widen]  A wider scope to ask again in.
 * @typedef {{ message?: string, retryable?: boolean }} ErrorBody  The `error` event, or a refusal's `error`.
 * @typedef {['meta', Meta] | ['sources', { sources: Source[] }] | ['token', { text: string }]
 *   | ['done', Done] | ['error', ErrorBody]} AnswerEvent  An event of the answer's stream, as [name, data].
 */

/**
 * Why there is no answer: the API's JSON error (a refused request, or an `error` event), with the
 * `Retry-After` of a refused request.
 */
export class ApiError extends Error {
  /**
   * @param {ErrorBody} error
   * @param {number} [retryAfterS]
   */
  constructor(error, retryAfterS = 0) {
    super(error.message || 'Something went wrong.');
    this.retryable = error.retryable !== false;
    this.retryAfterS = retryAfterS;
  }
}

/**
 * Why a request failed at the network level (fetch rejected: no HTTP reply could be read). A
 * cross-origin request the server refuses looks exactly like a server that is down, so both causes
 * are named, with the setting that allows this page's origin.
 *
 * @param {string} apiUrl  Absolute, as the widget's config has it.
 * @param {string} pageOrigin  location.origin
 */
export function unreachable(apiUrl, pageOrigin) {
  let apiOrigin = pageOrigin;
  try {
    apiOrigin = new URL(apiUrl, pageOrigin).origin;
  } catch {
    // Not a URL: said as it is below.
  }
  const where = apiUrl || pageOrigin;
  const message =
    apiOrigin === pageOrigin
      ? `Could not reach the book: is the Bookwise server at ${where} running?`
      : `Could not reach the book. Either the Bookwise server at ${where} is not running, or it does ` +
        `not allow this page's origin: set BOOKWISE_ALLOWED_ORIGINS=${pageOrigin} on the server.`;
  return new ApiError({ message });
}

/**
 * POST a question and deliver the answer's events as they arrive. Resolves when the stream ends;
 * rejects with an ApiError when the request is refused or cannot be sent (see `unreachable`), with
 * the stream's error when it breaks off, and with an AbortError when `signal` aborts.
 *
 * @param {string} apiUrl
 * @param {ChatBody} body
 * @param {{ signal: AbortSignal, onEvent: (event: AnswerEvent) => void }} options
 */
export async function streamChat(apiUrl, body, { signal, onEvent }) {
  let response;
  try {
    response = await postJson(`${apiUrl}/api/chat`, body, signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw unreachable(apiUrl, location.origin);
  }
  if (!response.ok) throw await refusal(response);
  if (!response.body) throw new ApiError({ message: 'The answer service sent no stream.' });
  // The server's events, as its schema has them (one the widget does not know is passed on, and ignored).
  const parser = createSseParser(({ event, data }) =>
    onEvent(/** @type {AnswerEvent} */ ([event, JSON.parse(data)])),
  );
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    parser.push(value);
  }
}

/**
 * @typedef {object} Feedback  The body of POST /api/feedback.
 * @property {string} request_id
 * @property {'up' | 'down'} rating
 * @property {string} [reason]  Why not helpful: incorrect, not_what_i_asked, unclear or other.
 * @property {string} question
 * @property {string} answer  The answer's Markdown.
 * @property {{ n: number, url: string, title: string, heading: string }[]} sources
 */

/**
 * @param {string} apiUrl
 * @param {Feedback} feedback
 */
export async function sendFeedback(apiUrl, feedback) {
  const response = await postJson(`${apiUrl}/api/feedback`, feedback);
  if (!response.ok) throw await refusal(response);
}

/**
 * @param {string} url
 * @param {ChatBody | Feedback} body
 * @param {AbortSignal} [signal]
 */
function postJson(url, body, signal) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...readerHeaders() },
    body: JSON.stringify(body),
    signal,
    credentials: 'omit',
  });
}

/** @param {Response} response */
async function refusal(response) {
  const retryAfterS = Number(response.headers.get('Retry-After')) || 0;
  let error;
  try {
    ({ error } = await response.json());
  } catch {
    // Not JSON: a proxy's error page, say. The status is all there is to tell.
  }
  return new ApiError(error ?? { message: `The answer service replied ${response.status}.` }, retryAfterS);
}

/**
 * The questions suggested for a page (`GET /api/suggestions`), or none when the API cannot tell.
 *
 * @param {string} apiUrl
 * @param {string} pageUrl
 * @returns {Promise<string[]>}
 */
export async function fetchSuggestions(apiUrl, pageUrl) {
  try {
    const response = await fetch(`${apiUrl}/api/suggestions?url=${encodeURIComponent(pageUrl)}`, {
      headers: readerHeaders(),
      credentials: 'omit',
    });
    const { questions } = response.ok ? await response.json() : {};
    return Array.isArray(questions) ? questions.filter((q) => typeof q === 'string') : [];
  } catch {
    return [];
  }
}
