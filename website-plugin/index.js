'use strict';

const path = require('path');
const {normalizeOptions} = require('./src/options');
const {collectDocs, writeManifest} = require('./src/manifest');
const {version: VERSION} = require('./package.json');

/**
 * docusaurus-plugin-bookwise: injects the Bookwise widget on every page and, at build time,
 * writes a manifest of doc permalinks and heading ids for `bookwise ingest --manifest`.
 * @param {import('@docusaurus/types').LoadContext} context
 * @param {import('./src/options').PluginOptions} options
 */
function pluginBookwise(context, options) {
  let docs = [];
  const locale = context.i18n.currentLocale;
  const baseUrl = context.siteConfig?.baseUrl ?? '/';

  const plugin = {
    name: 'docusaurus-plugin-bookwise',

    getClientModules() {
      if (!options.enabled) return [];
      const modules = [path.join(__dirname, 'src', 'client.js')];
      // A module of its own, so a site without page actions ships none of their code.
      if (options.pageActions) modules.push(path.join(__dirname, 'src', 'page-actions.js'));
      return modules;
    },

    async allContentLoaded({allContent}) {
      // Kept for postBuild, which only sees this plugin's own content.
      docs = allContent;
    },

    injectHtmlTags() {
      if (!options.enabled) return {};
      return {
        postBodyTags: [{tagName: 'script', attributes: widgetAttributes(options, baseUrl)}],
      };
    },

    async postBuild({siteConfig, outDir}) {
      if (!options.manifest) return;
      const entries = await collectDocs({
        allContent: docs,
        siteDir: context.siteDir,
        outDir,
        baseUrl: siteConfig.baseUrl,
        locale,
      });
      const file = path.join(outDir, options.manifest);
      await writeManifest({file, siteConfig, locale, docs: entries});
      const headings = entries.reduce((sum, doc) => sum + doc.headings.length, 0);
      console.log(`[bookwise] manifest: ${entries.length} docs, ${headings} headings → ${file}`);
    },
  };
  if (options.enabled && options.search) {
    // The theme's SearchBar (the navbar's search slot, which the classic theme leaves empty and a search
    // theme fills) becomes Bookwise's button: no swizzling for the owner. Docusaurus reads a theme path
    // whenever the method exists, so it exists only with the option.
    plugin.getThemePath = () => path.join(__dirname, 'src', 'theme');
  }
  return plugin;
}

/**
 * The widget's `<script>`: configured by data-* attributes, loaded after the page (defer).
 * `paths` are after the site's baseUrl, which the widget strips from the page's path. The locale is
 * not passed: the widget reads the `docusaurus_locale` meta tag, which follows navigations.
 */
function widgetAttributes(options, baseUrl) {
  const attributes = {
    src: options.widgetUrl,
    defer: true,
    'data-bookwise': true,
    'data-title': options.title,
    'data-selection': String(options.selection),
    'data-show-version': String(options.showIndexVersion),
    'data-base-url': baseUrl,
    // The widget compares it with the server's version (GET /api/config) and says when they clash.
    'data-plugin-version': VERSION,
  };
  if (options.apiUrl) attributes['data-api-url'] = options.apiUrl;
  // Owner options: only those set, so the widget's own defaults stay the defaults.
  if (options.placeholder) attributes['data-placeholder'] = options.placeholder;
  if (options.exampleQuestions.length) attributes['data-examples'] = JSON.stringify(options.exampleQuestions);
  if (options.disclaimer) attributes['data-disclaimer'] = options.disclaimer;
  if (options.accentColor) attributes['data-accent'] = options.accentColor;
  if (options.launcherPosition === 'bottom-left') attributes['data-position'] = 'left';
  if (options.launcherLabel) attributes['data-launcher-label'] = options.launcherLabel;
  if (options.navbarItem) attributes['data-navbar'] = 'true';
  if (options.search) attributes['data-search'] = 'true';
  if (options.paths.length) attributes['data-paths'] = options.paths.join(',');
  if (options.contentSelector) attributes['data-content-selector'] = options.contentSelector;
  if (options.maxSelectionChars) attributes['data-max-selection'] = String(options.maxSelectionChars);
  return attributes;
}

module.exports = pluginBookwise;
module.exports.default = pluginBookwise;
module.exports.validateOptions = ({options}) => normalizeOptions(options);
module.exports.widgetAttributes = widgetAttributes;
