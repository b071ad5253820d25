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
