'use strict';

/**
 * Plugin options, checked once at startup with messages that name the option.
 * No schema library: the plugin has no dependencies, so a site can install it from a path.
 *
 * @typedef {object} PluginOptions
 * @property {string} apiUrl  Bookwise API origin, e.g. "https://ask.example.org". "" = same origin as the site.
 * @property {string} widgetUrl  Where the widget script is loaded from. Default: `${apiUrl}/widget.js`.
 * @property {string} title  Panel title and launcher label.
 * @property {boolean} selection  Offer "Ask about this" on selected text.
 * @property {string[]} paths  Path prefixes (after baseUrl) where the widget shows; [] = every page.
 * @property {string} contentSelector  CSS selector of the doc content (where selections count); "" = the
 *   widget's own, which covers docs, blog posts and pages.
 * @property {boolean} showIndexVersion  Show the index version in the panel footer.
 * @property {number|null} maxSelectionChars  A lower cap on the selection sent than the server's
 *   (BOOKWISE_MAX_SELECTION_CHARS, which the widget reads from the server); null = the server's.
 * @property {string|false} manifest  File name of the build manifest in the output folder; false = none.
 * @property {boolean} enabled  false leaves pages untouched (e.g. for local previews).
 * @property {boolean} pageActions  "Copy page as Markdown" / "Open in ChatGPT" / "Open in Claude" under each
 *   doc page's title, using the page's `.md` twin (written into the build by `bookwise llms`).
 * @property {string} placeholder  The question box's placeholder; "" = the widget's own.
 * @property {string[]} exampleQuestions  Offered when the panel opens (at most 3), instead of the page's
 *   generated suggestions.
 * @property {string} disclaimer  A line under the panel, instead of "Answers come from the book…".
 * @property {string} accentColor  The launcher's and buttons' colour (a CSS colour); "" = the site's primary.
 * @property {'bottom-right'|'bottom-left'} launcherPosition  The launcher's corner.
 * @property {string} launcherLabel  The launcher's text; "" = the title.
 * @property {boolean} navbarItem  An item in the navbar (right side) that opens the panel.
 * @property {boolean} search  Bookwise as the theme's search bar: a navbar button (the theme's `SearchBar`),
 *   Ctrl+K / ⌘K and `/` open a search modal whose last row asks the chat; false keeps the site's own search.
 */

/** @type {PluginOptions} */
const DEFAULT_OPTIONS = Object.freeze({
  apiUrl: '',
  widgetUrl: '',
  title: 'Ask the book',
  selection: true,
  paths: [],
  contentSelector: '',
  showIndexVersion: false,
  maxSelectionChars: null,
  manifest: 'bookwise-manifest.json',
  enabled: true,
  pageActions: false,
  placeholder: '',
  exampleQuestions: [],
  disclaimer: '',
  accentColor: '',
  launcherPosition: 'bottom-right',
  launcherLabel: '',
  navbarItem: false,
  search: false,
});

const MAX_EXAMPLES = 3;
// Hex, rgb()/hsl() and named colours: what an owner writes; nothing that could end the declaration.
const CSS_COLOUR = /^(#[0-9a-f]{3,8}|(rgb|rgba|hsl|hsla)\([\d\s.,%/]+\)|[a-z]{3,20})$/i;

const shortText = (max) => (value) => typeof value === 'string' && value.length <= max && !/[\n\r]/.test(value);

const CHECKS = {
  apiUrl: (value) => typeof value === 'string' && (value === '' || isHttpUrl(value)),
  widgetUrl: (value) => typeof value === 'string' && (value === '' || isHttpUrl(value) || value.startsWith('/')),
  title: (value) => typeof value === 'string' && value.trim() !== '' && value.length <= 80,
  selection: (value) => typeof value === 'boolean',
  paths: (value) => Array.isArray(value) && value.every((p) => typeof p === 'string' && p.startsWith('/')),
  contentSelector: (value) => typeof value === 'string' && (value === '' || value.trim() !== ''),
  showIndexVersion: (value) => typeof value === 'boolean',
  maxSelectionChars: (value) => value === null || (Number.isInteger(value) && value > 0),
  manifest: (value) => value === false || (typeof value === 'string' && /^[\w.-]+\.json$/.test(value)),
  enabled: (value) => typeof value === 'boolean',
  pageActions: (value) => typeof value === 'boolean',
  placeholder: shortText(120),
  exampleQuestions: (value) =>
    Array.isArray(value) &&
    value.length <= MAX_EXAMPLES &&
    value.every((q) => typeof q === 'string' && q.trim() !== '' && q.length <= 200),
  disclaimer: shortText(200),
  accentColor: (value) => value === '' || (typeof value === 'string' && CSS_COLOUR.test(value)),
  launcherPosition: (value) => value === 'bottom-right' || value === 'bottom-left',
  launcherLabel: shortText(40),
  navbarItem: (value) => typeof value === 'boolean',
  search: (value) => typeof value === 'boolean',
};

const EXPECTED = {
  apiUrl: 'an http(s) URL such as "https://ask.example.org", or "" for the site\'s own origin',
  widgetUrl: 'an http(s) URL or a path starting with "/"',
  title: 'a non-empty string of at most 80 characters',
  selection: 'true or false',
  paths: 'an array of path prefixes starting with "/"',
  contentSelector: 'a CSS selector, or "" for the widget\'s own',
  showIndexVersion: 'true or false',
  maxSelectionChars: 'a positive integer, or null for the server\'s limit',
  manifest: 'a file name ending in .json, or false',
  enabled: 'true or false',
  pageActions: 'true or false',
  placeholder: 'a one-line string of at most 120 characters',
  exampleQuestions: `an array of at most ${MAX_EXAMPLES} non-empty questions of at most 200 characters`,
  disclaimer: 'a one-line string of at most 200 characters',
  accentColor: 'a CSS colour such as "#2e8555", "rgb(46 133 85)" or "teal", or ""',
  launcherPosition: '"bottom-right" or "bottom-left"',
  launcherLabel: 'a one-line string of at most 40 characters',
  navbarItem: 'true or false',
  search: 'true or false',
};

function isHttpUrl(value) {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.pathname === '/' && !url.search;
  } catch {
    return false;
  }
}

/**
 * Options with defaults applied, or an Error listing every problem.
 * @param {Record<string, unknown>} options
 * @returns {PluginOptions}
 */
function normalizeOptions(options = {}) {
  const problems = [];
  for (const name of Object.keys(options)) {
    if (name === 'id') continue; // Docusaurus adds the plugin instance id
    if (!(name in DEFAULT_OPTIONS)) problems.push(`unknown option "${name}"`);
  }
  const merged = {...DEFAULT_OPTIONS, ...options};
  for (const [name, check] of Object.entries(CHECKS)) {
    if (!check(merged[name])) {
      problems.push(`"${name}" must be ${EXPECTED[name]} (got ${JSON.stringify(merged[name])})`);
    }
  }
  if (problems.length) {
    throw new Error(`docusaurus-plugin-bookwise: invalid options:\n- ${problems.join('\n- ')}`);
  }
  merged.id = merged.id ?? 'default'; // Docusaurus' own schemas add this; ours must too
  merged.apiUrl = merged.apiUrl.replace(/\/+$/, '');
  merged.widgetUrl = merged.widgetUrl || `${merged.apiUrl}/widget.js`;
  return merged;
}

module.exports = {DEFAULT_OPTIONS, normalizeOptions};
