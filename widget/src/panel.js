/** The widget's visible shell: the launcher, the dialog, its message list and the composer. */
import { h } from './dom.js';
import { navigate } from './urls.js';

const PHONE = '(max-width: 599.98px)';
const TOUCH = '(hover: none) and (pointer: coarse)';
const FOCUSABLE = 'button:not([disabled]), textarea, a[href]';
const NEAR_END_PX = 48;
const ANNOUNCED = 3; // messages kept in the status region
/** What the quiz chip promises: what happens to a reply, with a model or without (or not known yet). */
export const QUIZ_CHIP = {
  llm: 'Quiz: your reply is checked against the book.',
  extractive: 'Quiz: your reply is compared with the book’s own words.',
  unknown: 'Quiz: reply with your answer.',
};

/**
 * @typedef {import('./config.js').Config} Config
 * @typedef {import('./page.js').Selection} Selection
 * @typedef {object} PanelHooks
 * @property {(question: string, selection: Selection | undefined) => void} submit
 * @property {(action: import('./conversation.js').Action) => void} study  A panel action on the page.
 * @property {() => void} stop
 * @property {() => void} clear
 * @property {() => void} endQuiz
 * @property {() => void} nextQuestion
 * @property {(open: boolean) => void} toggled
 * @property {(target: Element, link: Element) => void} land  A followed link's anchor was scrolled to.
 */

export class Panel {
  /** @type {Selection | undefined} */
  #selection;
  /** @type {HTMLElement | null} */
  #returnFocus = null;
  #busy = false;
  #following = true;
  /** @type {HTMLElement | undefined} The newest turn, whose start is kept in view. */
  #latest;
  #root;
  #config;
  #hooks;
  #launcher;
  #dialog;
  #empty;
  #input;
  #chip = h('div', { class: 'bw-chip', 'data-bw': 'selection-chip', hidden: true });
  #quizPromise = h('span', { 'data-bw': 'quiz-promise' }, QUIZ_CHIP.unknown);
  #quizChip = h(
    'div',
    { class: 'bw-chip bw-quiz', 'data-bw': 'quiz-chip', hidden: true },
    this.#quizPromise,
    h(
      'button',
      { class: 'bw-chip-button', 'data-bw': 'quiz-next', onclick: () => this.#hooks.nextQuestion() },
      'New question',
    ),
    iconButton('quiz-end', 'End the quiz', '×', () => this.#hooks.endQuiz()),
  );
  #announcer = h('div', {
    class: 'bw-sr',
    'data-bw': 'announce',
    role: 'status',
    'aria-relevant': 'additions',
  });
  #suggestions = h('ul', {
    class: 'bw-suggestions',
    'data-bw': 'suggestions',
    'aria-label': 'Suggested questions',
  });
  #study = h(
    'div',
    { class: 'bw-study', 'data-bw': 'study', role: 'group', 'aria-label': 'Study this page' },
    h(
      'button',
      {
        class: 'bw-chip-button',
        'data-bw': 'study-summarize',
        onclick: () => this.#hooks.study('summarize_page'),
      },
      'Summarize this page',
    ),
    h(
      'button',
      { class: 'bw-chip-button', 'data-bw': 'study-quiz', onclick: () => this.#hooks.study('quiz_page') },
      'Quiz me on this section',
    ),
  );
  #version = h('span', { 'data-bw': 'version', hidden: true });
  #mismatch = h('p', {
    class: 'bw-error bw-mismatch',
    'data-bw': 'version-mismatch',
    role: 'status',
    hidden: true,
  });
  #sendButton = h('button', { class: 'bw-send', 'data-bw': 'send', onclick: () => this.#submit() }, 'Send');
  #stopButton = h('button', { class: 'bw-stop', 'data-bw': 'stop', hidden: true }, 'Stop');
  #messages = h('div', {
    class: 'bw-messages',
    'data-bw': 'messages',
    role: 'log',
    'aria-label': 'Conversation',
    onclick: (event) => this.#followLink(/** @type {MouseEvent} */ (event)),
    onscroll: () => (this.#following = nearEnd(this.#messages)),
  });

  /**
   * @param {ShadowRoot} root
   * @param {Config} config
   * @param {PanelHooks} hooks
   */
  constructor(root, config, hooks) {
    this.#root = root;
    this.#config = config;
    this.#hooks = hooks;
    this.#stopButton.addEventListener('click', hooks.stop);
    // No keyboard shortcut to advertise on a touch screen.
    const keys = !window.matchMedia(TOUCH).matches;
    this.#empty = h('div', { class: 'bw-empty' }, emptyState(config, keys), this.#suggestions);
    this.#messages.append(this.#empty);
    this.#launcher = h(
      'button',
      {
        class: 'bw-launcher',
        'data-bw': 'launcher',
        'aria-haspopup': 'dialog',
        'aria-keyshortcuts': keys && 'Control+I Meta+I',
        title: keys ? `${config.title} (Ctrl+I)` : config.title,
        onclick: () => this.open(),
      },
      `✦ ${config.label}`,
    );
    this.#input = h('textarea', {
      class: 'bw-input',
      'data-bw': 'input',
      rows: 1,
      'aria-label': 'Your question',
      placeholder: config.placeholder,
      onkeydown: (event) => this.#onInputKey(/** @type {KeyboardEvent} */ (event)),
    });
    this.#dialog = h(
      'div',
      {
        class: 'bw-panel',
        'data-bw': 'panel',
        role: 'dialog',
        'aria-modal': 'true',
        'aria-label': config.title,
        hidden: true,
        onkeydown: (event) => this.#onKey(/** @type {KeyboardEvent} */ (event)),
      },
      h(
        'header',
        { class: 'bw-header' },
        h('h2', {}, config.title),
        iconButton('clear', 'New conversation', '↺', () => this.#clear()),
        iconButton('close', 'Close', '×', () => this.close()),
      ),
      this.#mismatch,
      this.#messages,
      h(
        'div',
        { class: 'bw-composer' },
        this.#study,
        this.#quizChip,
        this.#chip,
        h('div', { class: 'bw-row' }, this.#input, this.#sendButton, this.#stopButton),
      ),
      h(
        'p',
        { class: 'bw-footer', 'data-bw': 'disclaimer' },
        config.disclaimer || 'Answers come from the book: check the cited sections.',
        this.#version,
      ),
      this.#announcer,
    );
    root.append(this.#launcher, this.#dialog);
  }

  get isOpen() {
    return !this.#dialog.hidden;
  }

  /** @param {DOMRect} b  Whether the dialog covers any of this box. */
  covers(b) {
    const a = this.#dialog.getBoundingClientRect();
    return this.isOpen && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }

  open() {
    if (!this.isOpen) {
      const active = document.activeElement;
      this.#returnFocus = active instanceof HTMLElement && active !== this.#root.host ? active : null;
      this.#dialog.hidden = false;
      this.#launcher.hidden = true;
      this.#following = true;
      this.follow();
      this.#hooks.toggled(true);
    }
    this.#input.focus();
  }

  close() {
    if (!this.isOpen) return;
    this.#dialog.hidden = true;
    this.#launcher.hidden = false;
    this.#hooks.toggled(false);
    (this.#returnFocus?.isConnected ? this.#returnFocus : this.#launcher).focus();
  }

  toggle() {
    if (this.isOpen) this.close();
    else this.open();
  }

  /** @param {boolean} busy  An answer is streaming: Send gives way to Stop. */
  setBusy(busy) {
    const losingFocus = this.#root.activeElement === (busy ? this.#sendButton : this.#stopButton);
    this.#busy = busy;
    this.#sendButton.hidden = busy;
    this.#stopButton.hidden = !busy;
    if (losingFocus) this.#input.focus();
  }

  /** @param {Selection | undefined} selection  What the next question will be about. */
  pin(selection) {
    this.#selection = selection;
    this.#chip.hidden = !selection;
    this.#chip.replaceChildren();
    if (selection) {
      const unpin = () => {
        this.pin(undefined);
        this.#input.focus();
      };
      this.#chip.append(
        h('q', {}, selection.text),
        iconButton('selection-remove', 'Remove the selection', '×', unpin),
      );
    }
    this.#input.placeholder = selection
      ? 'Ask about it, or press Enter'
      : this.#quizChip.hidden
        ? this.#config.placeholder
        : 'Your answer…';
  }

  /**
   * The questions offered while the conversation is empty; clicking one asks it.
   *
   * @param {string[]} questions
   */
  suggest(questions) {
    this.#suggestions.replaceChildren(
      ...questions.map((question) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              class: 'bw-chip-button',
              'data-bw': 'suggestion',
              onclick: () => this.#hooks.submit(question, undefined),
            },
            question,
          ),
        ),
      ),
    );
  }

  /** @param {boolean} shown  Whether the page has content to summarize or quiz on. */
  offerStudy(shown) {
    this.#study.hidden = !shown;
  }

  /** @param {import('./limits.js').Answers} answers  Who answers: the quiz chip says what a reply meets. */
  answeredBy(answers) {
    this.#quizPromise.textContent = QUIZ_CHIP[answers];
  }

  /** @param {boolean} active  A quiz is on: the reader's next message answers it. */
  quiz(active) {
    this.#quizChip.hidden = !active;
    this.#input.placeholder = active ? 'Your answer…' : this.#config.placeholder;
  }

  /**
   * Say `text` to screen readers (a status region, not shown). Each message is added, not written
   * over the last: two in one moment (the sources, then the end of a short answer) are both read.
   *
   * @param {string} text
   */
  announce(text) {
    this.#announcer.append(h('p', {}, text));
    while (this.#announcer.childElementCount > ANNOUNCED) this.#announcer.firstElementChild?.remove();
  }

  get empty() {
    return this.#empty.isConnected;
  }

  /** @param {HTMLElement} element  A new turn. */
  add(element) {
    this.#empty.remove();
    this.#messages.append(element);
    this.#latest = element;
    this.#following = true;
    this.follow();
  }

  /**
   * Keep the newest text in view while it fits, unless the reader scrolled up to read something
   * else. Once the newest turn is taller than the panel, its start (the question, the answer's first
   * lines, its best quote) stays at the top and the rest waits for the reader to scroll; a reader who
   * scrolls on to the end is followed there.
   */
  follow() {
    if (!this.#following) return;
    const messages = this.#messages;
    const end = messages.scrollHeight - messages.clientHeight;
    const start = this.#latest?.isConnected ? this.#offsetOf(this.#latest) : end;
    const past = messages.scrollTop > start + 1; // the reader went on beyond the turn's start
    const top = Math.max(0, past ? end : Math.min(end, start));
    if (Math.abs(messages.scrollTop - top) >= 1) messages.scrollTop = top;
  }

  /** @param {HTMLElement} element  Where it starts in the message list's scrolled content. */
  #offsetOf(element) {
    const messages = this.#messages;
    const padding = parseFloat(getComputedStyle(messages).paddingTop) || 0;
    const top = element.getBoundingClientRect().top - messages.getBoundingClientRect().top;
    return top + messages.scrollTop - padding;
  }

  /** @param {string} version */
  showVersion(version) {
    this.#version.textContent = ` Index ${version}.`;
    this.#version.hidden = false;
  }

  /** @param {string} text  Why this site's Bookwise and its server do not go together. */
  showMismatch(text) {
    this.#mismatch.textContent = text;
    this.#mismatch.hidden = !text;
  }

  #clear() {
    this.#hooks.clear();
    this.#messages.replaceChildren(this.#empty);
    this.#input.focus();
  }

  #submit() {
    const question = this.#input.value;
    if (this.#busy || (!question.trim() && !this.#selection)) return;
    const selection = this.#selection;
    this.#input.value = '';
    this.pin(undefined);
    this.#hooks.submit(question, selection);
  }

  /** @param {KeyboardEvent} event */
  #onInputKey(event) {
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    this.#submit();
  }

  /** @param {KeyboardEvent} event */
  #onKey(event) {
    if (event.key === 'Escape') {
      event.stopPropagation();
      this.close();
    } else if (event.key === 'Tab') {
      this.#keepFocusInside(event);
    }
  }

  /**
   * Tab moves in the dialog's own order (the browser's: an answer's links, a code block that scrolls,
   * its Copy, the feedback, the composer); only past its last stop it wraps to the first, and back.
   * Elements the browser makes Tab stops of their own accord (a scrolling code block) are not in
   * FOCUSABLE: focus on one of them is inside, not lost.
   *
   * @param {KeyboardEvent} event
   */
  #keepFocusInside(event) {
    const focusable = /** @type {HTMLElement[]} */ ([...this.#dialog.querySelectorAll(FOCUSABLE)]);
    const visible = focusable.filter((element) => element.getClientRects().length > 0);
    const [first, last] = [visible[0], visible[visible.length - 1]];
    const active = this.#root.activeElement;
    const inside = active instanceof HTMLElement && this.#dialog.contains(active);
    if (inside && active !== (event.shiftKey ? first : last)) return;
    event.preventDefault();
    (event.shiftKey ? last : first).focus();
  }

  /**
   * Links in answers are the site's own: follow them in this tab, as the site would.
   *
   * @param {MouseEvent} event
   */
  #followLink(event) {
    const link = /** @type {Element} */ (event.target).closest('a[href]');
    const modified = event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey;
    if (!(link instanceof HTMLAnchorElement) || modified) return;
    event.preventDefault();
    navigate(link.href, (target) => this.#hooks.land(target, link));
    if (window.matchMedia(PHONE).matches) this.close();
  }
}

/**
 * @param {Config} config
 * @param {boolean} keys  The reader has a keyboard to toggle the panel with.
 */
function emptyState(config, keys) {
  const tip = config.selection ? ' Or select text on the page and ask about it.' : '';
  const shortcut = keys ? ' Ctrl+I (⌘I) toggles this panel.' : '';
  return h('p', {}, `Ask anything about ${config.subject}: answers cite their sections.${tip}${shortcut}`);
}

/**
 * @param {string} name  Its `data-bw` hook.
 * @param {string} label
 * @param {string} icon
 * @param {() => void} onclick
 */
function iconButton(name, label, icon, onclick) {
  return h('button', { class: 'bw-icon', 'data-bw': name, 'aria-label': label, title: label, onclick }, icon);
}

/** @param {HTMLElement} element */
function nearEnd(element) {
  return element.scrollHeight - element.scrollTop - element.clientHeight < NEAR_END_PX;
}
