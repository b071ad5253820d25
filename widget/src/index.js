/**
 * Bookwise's chat widget: one script tag on a documentation site adds an "Ask the book" button
 * and a panel that streams cited answers from a Bookwise API. Everything lives in a shadow root
 * on a host element of its own, appended to <body>, so neither the site's CSS nor its framework's
 * re-renders can reach it.
 */
import { fetchSuggestions } from './api.js';
import { ownScript, readConfig, showsOn } from './config.js';
import { Conversation } from './conversation.js';
import { h } from './dom.js';
import { decoratePage, dock, highlightLanding, styleHostPage } from './host.js';
import { answersOf, DEFAULT_LIMITS, fetchServerConfig, selectionCap } from './limits.js';
import { pageContext, watchRoute, watchSelection } from './page.js';
import { loadRenderer } from './render.js';
import { Panel } from './panel.js';
import { Popover } from './popover.js';
import { watchSearch } from './search.js';
import { applyStyles } from './styles.js';
import { followTheme } from './theme.js';
import { navigate, returnOnBack, sameSiteUrl } from './urls.js';
import { versionMismatch } from './version.js';

/**
 * @typedef {import('./config.js').Config} Config
 * @typedef {Omit<BookwiseApi, 'version'>} Widget  The mounted widget (BookwiseApi: types/browser.d.ts).
 */

const HOST_ID = 'bookwise-widget';
const BACK_TO_TOP = '.theme-back-to-top-button';
const VERSION = process.env.BOOKWISE_VERSION; // replaced by the package's version at build time
const SCROLL_OPTIONS = { capture: true, passive: true };
const MAX_SUGGESTIONS = 3;
const MAX_MOVES = 5; // the launcher is put back first in the body at most so many times
const OPEN_KEY = 'bookwise-open'; // sessionStorage: the panel reopens after a reload in this tab

/**
 * @param {Config} config
 * @returns {Widget}
 */
function mount(config) {
  const host = h('div', { id: HOST_ID, 'data-state': 'idle', 'data-position': config.position });
  if (config.accent) host.style.setProperty('--bw-accent', config.accent);
  const root = host.attachShadow({ mode: 'open' });
  applyStyles(root);
  const served = fetchServerConfig(config.apiUrl); // before the first question needs its limits
  const limits = served.then((reply) => reply.limits);
  // What a selection may be: the server's limit (its defaults until it has told), or the owner's lower one.
  const selecting = {
    contentSelector: config.contentSelector,
    maxSelection: selectionCap(config.maxSelection, DEFAULT_LIMITS),
  };
  limits.then((known) => (selecting.maxSelection = selectionCap(config.maxSelection, known)));
  const conversation = new Conversation(
    config.apiUrl,
    {
      add: (turn) => panel.add(turn.element),
      state: (state) => {
        host.dataset.state = state;
        panel.setBusy(state === 'streaming');
      },
      meta: (meta) => {
        if (config.showVersion && meta.index_version) panel.showVersion(meta.index_version);
        answeredBy(answersOf(meta.answer_mode)); // an older server's /api/config does not say
      },
      update: () => panel.follow(),
      quiz: (quiz) => panel.quiz(Boolean(quiz)),
      announce: (text) => panel.announce(text),
    },
    limits,
    config.contentSelector,
  );
  /** @type {Map<string, Promise<string[]>>} */
  const suggestions = new Map();
  /** @type {Range | null} The passage a citation landed on, when the panel closes for it. */
  let landed = null;
  // The owner's example questions, else the page's own suggestions from the API.
  const suggest = async () => {
    const url = location.pathname;
    if (!suggestions.has(url)) suggestions.set(url, fetchSuggestions(config.apiUrl, url));
    const questions = config.examples.length
      ? config.examples
      : await /** @type {Promise<string[]>} */ (suggestions.get(url));
    if (url === location.pathname) panel.suggest(questions.slice(0, MAX_SUGGESTIONS));
  };
  const panel = new Panel(root, config, {
    submit: (question, selection) => conversation.ask(question, { selection }),
    study: (action) => conversation.ask('', { action }),
    stop: () => conversation.stop(),
    clear: () => {
      conversation.clear();
      suggest();
    },
    endQuiz: () => conversation.endQuiz(),
    nextQuestion: () => conversation.nextQuestion(),
    toggled: (open) => {
      if (open) loadRenderer(config.markdownUrl).catch(console.warn);
      dock(open, config, landed ?? undefined);
      landed = null;
      remember(OPEN_KEY, open ? '1' : '');
      if (open && conversation.empty) suggest();
    },
    land: (target, link) => {
      // Docked on a wide screen, the panel is beside the page; elsewhere it may cover the passage.
      const { marked, box } = highlightLanding(target, conversation.quotesFor(link));
      if (!panel.covers(box)) return;
      landed = marked; // undocking reflows the page: the marked passage stays where it was
      panel.close();
    },
  });
  served.then(({ version, answers }) => {
    panel.showMismatch(versionMismatch({ server: version, widget: VERSION, plugin: config.pluginVersion }));
    answeredBy(answers);
  });
  /**
   * The study buttons and the quiz chip promise what happens: a model's answers, or the book's own words.
   *
   * @param {import('./limits.js').Answers | null} answers
   */
  function answeredBy(answers) {
    if (!answers) return;
    conversation.answers = answers;
    panel.answeredBy(answers);
    popover.answeredBy(answers);
  }
  const askAbout = (/** @type {import('./page.js').Selection} */ selection) => {
    // A code block's Ask brings all its text: cut like a selection.
    panel.pin({ ...selection, text: selection.text.slice(0, selecting.maxSelection) });
    panel.open();
  };
  const popover = new Popover((selection, action) => {
    document.getSelection()?.removeAllRanges();
    const { rect, ...chosen } = selection;
    if (action === 'ask') askAbout(chosen);
    else {
      panel.open();
      conversation.ask('', { selection: chosen, action });
    }
  });
  root.append(popover.element);
  // The search box (when the owner offers it): a result lands on its heading as a citation does; its
  // last row asks the chat.
  const search = config.search
    ? watchSearch(
        config.searchUrl,
        (Modal) =>
          new Modal(root, {
            apiUrl: config.apiUrl,
            reader: () => {
              const { version, locale } = pageContext();
              return { version, locale };
            },
            land: (url) => {
              const href = sameSiteUrl(url);
              if (href) navigate(href, (target) => highlightLanding(target, []));
            },
            ask: (question) => {
              panel.open();
              conversation.ask(question, {});
            },
          }),
        () => !host.hidden,
      )
    : null;
  // First in the body, so the launcher is the page's first Tab stop (it is fixed: where it sits in
  // the DOM does not move it on screen), and kept first when the site's scripts add to the body's
  // start later (a banner, a portal); not while it is in use.
  document.body.prepend(host);
  let moves = 0;
  const keepFirst = () => {
    const first = document.body.firstElementChild === host;
    const busy = panel.isOpen || document.activeElement === host; // moving it would lose the focus
    if (first || busy || moves >= MAX_MOVES || !host.isConnected) return;
    moves += 1; // another script that wants the first place too: give way rather than fight
    document.body.prepend(host);
  };
  const bodyWatcher = new MutationObserver(keepFirst);
  bodyWatcher.observe(document.body, { childList: true });
  host.addEventListener('focusout', () => setTimeout(keepFirst));
  conversation.restore();
  if (!conversation.empty) loadRenderer(config.markdownUrl).catch(console.warn);

  const showWhereAllowed = () => {
    host.hidden = !showsOn(config, location.pathname);
    // Docusaurus' "back to top" button sits where the launcher does: the launcher moves above it.
    host.toggleAttribute('data-above-back-to-top', Boolean(document.querySelector(BACK_TO_TOP)));
    popover.offer(null);
    panel.offerStudy(Boolean(document.querySelector(config.contentSelector)));
    if (panel.isOpen && conversation.empty) suggest();
  };
  /** @param {KeyboardEvent} event */
  const toggleOnShortcut = (event) => {
    const modified = (event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey;
    if (!modified || event.key?.toLowerCase() !== 'i' || host.hidden) return;
    event.preventDefault();
    panel.toggle();
  };
  const hidePopover = () => popover.offer(null);
  document.addEventListener('keydown', toggleOnShortcut);
  window.addEventListener('scroll', hidePopover, SCROLL_OPTIONS);
  const stops = [
    followTheme(host),
    watchRoute(showWhereAllowed),
    config.selection
      ? watchSelection(selecting, (selection) => popover.offer(host.hidden ? null : selection))
      : null,
    () => document.removeEventListener('keydown', toggleOnShortcut),
    () => window.removeEventListener('scroll', hidePopover, SCROLL_OPTIONS),
    styleHostPage(),
    decoratePage(config, { ask: askAbout, open: () => panel.open() }),
    returnOnBack(),
    () => dock(false, config),
    () => search?.stop(),
    () => bodyWatcher.disconnect(),
  ];
  showWhereAllowed();
  if (sessionValue(OPEN_KEY) && !host.hidden) panel.open();

  return {
    open: () => panel.open(),
    close: () => panel.close(),
    ask(question, { selectedText, headingId, scope, action } = {}) {
      const text = selectedText?.trim().slice(0, selecting.maxSelection);
      panel.open();
      return conversation.ask(question, {
        selection: text ? { text, headingId, url: location.pathname } : undefined,
        scope,
        action,
      });
    },
    destroy() {
      conversation.stop();
      stops.forEach((stop) => stop?.());
      host.remove();
    },
  };
}

/**
 * @param {string} key
 * @param {string} value  "" forgets it.
 */
function remember(key, value) {
  try {
    if (value) sessionStorage.setItem(key, value);
    else sessionStorage.removeItem(key);
  } catch {
    // No storage: nothing to remember across a reload.
  }
}

/** @param {string} key */
function sessionValue(key) {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Mount once per page, however many times the script runs (a second tag, a client-side route). */
function install() {
  if (window.Bookwise) return;
  // Read now: document.currentScript is only set while this script first runs.
  const config = readConfig(ownScript());
  /** @type {Widget | undefined} */
  let widget;
  const start = () => {
    widget = mount(config);
  };
  if (document.body) start();
  else document.addEventListener('DOMContentLoaded', start, { once: true });

  window.Bookwise = {
    version: VERSION,
    open: () => widget?.open(),
    close: () => widget?.close(),
    ask: (question, options) =>
      widget ? widget.ask(question, options) : Promise.reject(new Error('Bookwise is not mounted yet.')),
    destroy() {
      document.removeEventListener('DOMContentLoaded', start);
      widget?.destroy();
      widget = undefined;
      delete window.Bookwise;
    },
  };
}

install();
