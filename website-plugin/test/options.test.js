'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const plugin = require('..');
const {normalizeOptions} = require('../src/options');

test('defaults: same-origin API and widget', () => {
  const options = normalizeOptions({});
  assert.equal(options.apiUrl, '');
  assert.equal(options.widgetUrl, '/widget.js');
  assert.equal(options.selection, true);
  assert.equal(options.manifest, 'bookwise-manifest.json');
});

test('apiUrl loses its trailing slash and sets the widget URL', () => {
  const options = normalizeOptions({apiUrl: 'https://ask.example.org/'});
  assert.equal(options.apiUrl, 'https://ask.example.org');
  assert.equal(options.widgetUrl, 'https://ask.example.org/widget.js');
});

test('every problem is reported at once, naming the option', () => {
  assert.throws(
    () => normalizeOptions({apiUrl: 'javascript:alert(1)', title: '', paths: ['docs'], colour: 'red'}),
    (error) => {
      for (const name of ['apiUrl', 'title', 'paths', 'unknown option "colour"']) {
        assert.match(error.message, new RegExp(name));
      }
      return true;
    },
  );
});

test('an API URL with a path or query is refused (the widget appends /api/...)', () => {
  assert.throws(() => normalizeOptions({apiUrl: 'https://ask.example.org/bookwise?x=1'}), /apiUrl/);
});

test('validateOptions is what Docusaurus calls', () => {
  assert.equal(plugin.validateOptions({options: {title: 'Ask'}, validate: () => null}).title, 'Ask');
});

test('the widget script carries its configuration as data attributes', () => {
  const options = normalizeOptions({apiUrl: 'https://ask.example.org', paths: ['/docs'], selection: false});
  const context = {i18n: {currentLocale: 'fr'}, siteDir: '/site', siteConfig: {baseUrl: '/book/'}};
  const tags = plugin(context, options).injectHtmlTags();
  const [script] = tags.postBodyTags;
  assert.equal(script.tagName, 'script');
  assert.equal(script.attributes.src, 'https://ask.example.org/widget.js');
  assert.equal(script.attributes['data-api-url'], 'https://ask.example.org');
  assert.equal(script.attributes['data-paths'], '/docs');
  assert.equal(script.attributes['data-selection'], 'false');
  assert.equal(script.attributes['data-base-url'], '/book/'); // `paths` are after it
  assert.equal(script.attributes['data-locale'], undefined); // read from the page's meta tag instead
  assert.equal(script.attributes.defer, true);
  // The widget checks the server's version against the plugin's own.
  assert.equal(script.attributes['data-plugin-version'], require('../package.json').version);
  assert.match(script.attributes['data-plugin-version'], /^\d+\.\d+\.\d+/);
});

test('enabled: false injects nothing', () => {
  const options = normalizeOptions({enabled: false});
  const instance = plugin({i18n: {currentLocale: 'en'}, siteDir: '/site'}, options);
  assert.deepEqual(instance.injectHtmlTags(), {});
  assert.deepEqual(instance.getClientModules(), []);
});

test('pageActions: off by default; true adds its client module after the widget\'s', () => {
  assert.equal(normalizeOptions({}).pageActions, false);
  const context = {i18n: {currentLocale: 'en'}, siteDir: '/site'};
  const off = plugin(context, normalizeOptions({})).getClientModules();
  const on = plugin(context, normalizeOptions({pageActions: true})).getClientModules();
  assert.equal(off.length, 1);
  assert.deepEqual(on.slice(0, 1), off);
  assert.match(on[1], /page-actions\.js$/);
  assert.deepEqual(plugin(context, normalizeOptions({enabled: false, pageActions: true})).getClientModules(), []);
});

test('pageActions must be a boolean', () => {
  assert.throws(() => normalizeOptions({pageActions: 'yes'}), /"pageActions" must be true or false/);
});

test('owner options reach the widget as data attributes, and only when set', () => {
  const context = {i18n: {currentLocale: 'en'}, siteDir: '/site', siteConfig: {baseUrl: '/'}};
  const owned = normalizeOptions({
    placeholder: 'Ask about robots…',
    exampleQuestions: ['What is odometry?', 'How does a PID controller work?'],
    disclaimer: 'Answers may be wrong: check the cited sections.',
    accentColor: '#c0392b',
    launcherPosition: 'bottom-left',
    launcherLabel: 'Ask',
    navbarItem: true,
  });
  const [script] = plugin(context, owned).injectHtmlTags().postBodyTags;
  assert.equal(script.attributes['data-placeholder'], 'Ask about robots…');
  assert.deepEqual(JSON.parse(script.attributes['data-examples']), owned.exampleQuestions);
  assert.equal(script.attributes['data-disclaimer'], 'Answers may be wrong: check the cited sections.');
  assert.equal(script.attributes['data-accent'], '#c0392b');
  assert.equal(script.attributes['data-position'], 'left');
  assert.equal(script.attributes['data-launcher-label'], 'Ask');
  assert.equal(script.attributes['data-navbar'], 'true');
  const [plain] = plugin(context, normalizeOptions({})).injectHtmlTags().postBodyTags;
  for (const name of ['placeholder', 'examples', 'disclaimer', 'accent', 'position', 'launcher-label', 'navbar']) {
    assert.equal(plain.attributes[`data-${name}`], undefined, name);
  }
});

test('owner options are checked, naming each bad one', () => {
  assert.throws(
    () =>
      normalizeOptions({
        placeholder: 'two\nlines',
        exampleQuestions: ['a', 'b', 'c', 'd'],
        disclaimer: 42,
        accentColor: 'red; background: url(x)',
        launcherPosition: 'top-left',
        launcherLabel: 'x'.repeat(41),
        navbarItem: 'yes',
      }),
    (error) => {
      const names = ['placeholder', 'exampleQuestions', 'disclaimer', 'accentColor', 'launcherPosition'];
      for (const name of [...names, 'launcherLabel', 'navbarItem']) assert.match(error.message, new RegExp(`"${name}"`));
      return true;
    },
  );
  for (const colour of ['#2e8555', 'rgb(46 133 85)', 'hsl(150, 49%, 35%)', 'teal']) {
    assert.equal(normalizeOptions({accentColor: colour}).accentColor, colour);
  }
  assert.throws(() => normalizeOptions({exampleQuestions: ['']}), /exampleQuestions/);
});

/**
 * The widget's configuration as it reads the plugin's script tag (widget/src/config.js): data-foo-bar
 * attributes become dataset.fooBar.
 */
async function widgetConfigOf(owned) {
  const {readConfig} = await import('../../widget/src/config.js');
  const options = normalizeOptions({apiUrl: 'https://ask.example.org', ...owned});
  const instance = plugin({i18n: {currentLocale: 'en'}, siteDir: '/site'}, options);
  const [script] = instance.injectHtmlTags().postBodyTags;
  const dataset = {};
  for (const [name, value] of Object.entries(script.attributes)) {
    if (name.startsWith('data-')) dataset[name.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = value;
  }
  return readConfig({dataset});
}

test("the widget's content selector unless the owner sets one: the plugin's narrower one won regression", async () => {
  const {DEFAULT_CONTENT_SELECTOR} = await import('../../widget/src/config.js');
  assert.equal(normalizeOptions({}).contentSelector, '');
  assert.equal((await widgetConfigOf({})).contentSelector, DEFAULT_CONTENT_SELECTOR);
  const owned = await widgetConfigOf({contentSelector: '.my-book'});
  assert.equal(owned.contentSelector, '.my-book');
  assert.throws(() => normalizeOptions({contentSelector: '  '}), /"contentSelector" must be a CSS selector/);
});

test("the server's selection limit unless the owner caps it: it was cut at the plugin's 4,000 regression", async () => {
  assert.equal(normalizeOptions({}).maxSelectionChars, null);
  const plain = await widgetConfigOf({});
  assert.equal(plain.maxSelection, 0); // no cap of its own: the server's limit (GET /api/config) applies
  const capped = await widgetConfigOf({maxSelectionChars: 1500});
  assert.equal(capped.maxSelection, 1500);
  assert.throws(() => normalizeOptions({maxSelectionChars: 0}), /"maxSelectionChars" must be a positive/);
});

test('search is off by default; on, the theme gets a SearchBar and the widget its search', () => {
  const context = {i18n: {currentLocale: 'en'}, siteDir: '/site'};
  const off = plugin(context, normalizeOptions({}));
  assert.equal(off.getThemePath, undefined); // the site's own search stays
  assert.equal(plugin.widgetAttributes(normalizeOptions({}), '/')['data-search'], undefined);
  const on = plugin(context, normalizeOptions({search: true}));
  assert.match(on.getThemePath(), /src[\\/]theme$/);
  assert.equal(plugin.widgetAttributes(normalizeOptions({search: true}), '/')['data-search'], 'true');
  assert.throws(() => normalizeOptions({search: 'yes'}), /"search" must be true or false/);
});
