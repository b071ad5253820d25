/**
 * @typedef {object} Config
 * @property {string} apiUrl  Where the Bookwise API answers, without a trailing slash.
 * @property {string} title
 * @property {string} subject  What the reader asks about, as the title names it ("Ask Robot Motion":
 *   "Robot Motion"); "the book" when the title names nothing after "Ask".
 * @property {string} placeholder
 * @property {boolean} selection  Whether highlight-to-ask is on.
 * @property {string} contentSelector  The page's content roots, where a selection may be asked about.
 * @property {string} baseUrl  The site's Docusaurus baseUrl ("/" or "/book/"): `paths` are after it.
 * @property {string[]} paths  Path prefixes (after baseUrl) where the widget shows; empty: everywhere.
 * @property {boolean} showVersion  Show the index version in the panel footer.
 * @property {number} maxSelection  The owner's cap on a selection, in characters (0: none, the server's
 *   limit applies; see selectionCap).
 * @property {string[]} examples  The owner's example questions (they replace the generated ones).
 * @property {string} disclaimer  A line under the panel, instead of the default one.
 * @property {string} accent  A CSS colour for the launcher and buttons ("" keeps the site's).
 * @property {'left' | 'right'} position  The launcher's corner (bottom left or right).
 * @property {string} label  The launcher's label (default: the title).
 * @property {boolean} navbar  Add an item to the Docusaurus navbar that opens the panel.
 * @property {string} markdownUrl  The Markdown renderer's script, next to the widget's own.
 * @property {boolean} search  The search box: Ctrl+K (⌘K), `/` and `[data-bookwise-search]` open it.
 * @property {string} searchUrl  The search modal's script, next to the widget's own.
 * @property {string} pluginVersion  The Docusaurus plugin's version ("": not loaded by the plugin).
 */

export const DEFAULT_CONTENT_SELECTOR = '.theme-doc-markdown, article .markdown, main article';

/** The script tag that loaded the widget, or null when it cannot be told. */
export function ownScript() {
  const current = document.currentScript;
  if (current instanceof HTMLScriptElement) return current;
  return /** @type {HTMLScriptElement | null} */ (document.querySelector('script[data-bookwise]'));
}

/**
 * Read the configuration from the script tag's data attributes.
 *
 * @param {HTMLScriptElement | null} script
 * @returns {Config}
 */
export function readConfig(script) {
  const data = script ? script.dataset : {};
  const maxSelection = Number.parseInt(data.maxSelection ?? '', 10);
  const title = data.title || 'Ask the book';
  const subject = subjectOf(title);
  return {
    apiUrl: (data.apiUrl || scriptOrigin(script)).replace(/\/+$/, ''),
    title,
    subject,
    placeholder: data.placeholder || `Ask a question about ${subject}…`,
    selection: data.selection !== 'false',
    contentSelector: data.contentSelector || DEFAULT_CONTENT_SELECTOR,
    baseUrl: data.baseUrl || '/',
    paths: (data.paths || '')
      .split(',')
      .map((path) => path.trim())
      .filter(Boolean),
    showVersion: data.showVersion === 'true',
    maxSelection: maxSelection > 0 ? maxSelection : 0,
    examples: jsonStrings(data.examples),
    disclaimer: data.disclaimer || '',
    accent: data.accent || '',
    position: data.position === 'left' ? 'left' : 'right',
    label: data.launcherLabel || data.title || 'Ask the book',
    navbar: data.navbar === 'true',
    markdownUrl: siblingUrl(script, data.apiUrl, 'markdown'),
    search: data.search === 'true',
    searchUrl: siblingUrl(script, data.apiUrl, 'search'),
    pluginVersion: data.pluginVersion || '',
  };
}

/**
 * What a title such as "Ask My Site" or "Ask about Robot Motion" says the reader asks about.
 *
 * @param {string} title
 */
export function subjectOf(title) {
  return title.match(/^\s*ask\s+(?:about\s+)?(.*?)[\s?!.…]*$/i)?.[1] || 'the book';
}

/**
 * A JSON array of strings (the plugin writes example questions so), or [] for anything else.
 *
 * @param {string | undefined} text
 * @returns {string[]}
 */
function jsonStrings(text) {
  try {
    const value = JSON.parse(text || '[]');
    return Array.isArray(value) ? value.filter((item) => typeof item === 'string' && item.trim()) : [];
  } catch {
    return [];
  }
}

/**
 * `…/widget.js` loads `…/widget-markdown.js` and `…/widget-search.js` (the build writes them
 * together; the API serves them).
 *
 * @param {HTMLScriptElement | null} script
 * @param {string | undefined} apiUrl
 * @param {'markdown' | 'search'} part
 */
function siblingUrl(script, apiUrl, part) {
  if (script?.src) {
    const url = new URL(script.src, location.href);
    url.search = '';
    url.pathname = url.pathname.replace(/(\.js)?$/, `-${part}.js`);
    return url.href;
  }
  return `${(apiUrl || location.origin).replace(/\/+$/, '')}/widget-${part}.js`;
}

/** @param {HTMLScriptElement | null} script */
function scriptOrigin(script) {
  return script?.src ? new URL(script.src, location.href).origin : location.origin;
}

/**
 * Whether the widget shows on a page: `paths` are prefixes after the site's baseUrl, as the
 * plugin's option documents ("/docs/" on a site served at "/book/" means "/book/docs/…").
 *
 * @param {Pick<Config, 'baseUrl' | 'paths'>} config
 * @param {string} pathname
 */
export function showsOn(config, pathname) {
  if (!config.paths.length) return true;
  const base = config.baseUrl.replace(/\/+$/, '');
  if (base && pathname !== base && !pathname.startsWith(`${base}/`)) return false;
  const route = pathname.slice(base.length) || '/';
  return config.paths.some((prefix) => route.startsWith(prefix));
}
