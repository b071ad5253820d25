// @ts-check
// The Bookwise manual (the Markdown pages in ../docs) as a Docusaurus site, with Bookwise on it.
// The pages stay in the repository's docs/ folder, readable on GitHub as they are; this folder holds
// only the site (its node_modules and build are kept out of the docs folder, which Bookwise reads).
// Docs plugin + classic theme without preset-classic, so no Algolia packages: Bookwise is the search.

// The docs plugin's options under `docs:`, as a preset takes them: `bookwise ingest` reads the
// config statically and finds `path` and `routeBasePath` there, so it needs no flags for them.
const site = {
  docs: {
    path: '../docs',
    routeBasePath: '/',
    sidebarPath: require.resolve('./sidebars.js'),
  },
};

/** @type {import('@docusaurus/types').Config} */
const config = {
  title: 'Bookwise documentation',
  tagline: 'A self-hosted chatbot for Docusaurus sites',
  url: 'https://bookwise.example.org',
  baseUrl: '/',
  favicon: 'img/favicon.svg', // browsers ask for one on every page; without it, a 404 in the console
  onBrokenLinks: 'throw',
  onBrokenAnchors: 'throw',
  future: {v4: true},
  markdown: {
    // The pages are plain Markdown, read on GitHub too: `.md` is CommonMark (a `<` or `{` in prose and
    // an HTML comment are text, not JSX), as GitHub reads it.
    format: 'detect',
  },
  i18n: {
    defaultLocale: 'en',
    locales: ['en'],
  },
  plugins: [
    [
      '@docusaurus/plugin-content-docs',
      /** @type {import('@docusaurus/plugin-content-docs').Options} */
      (site.docs),
    ],
    // The Bookwise plugin from this checkout; a site of its own would name the npm package:
    // ['docusaurus-plugin-bookwise', {apiUrl: 'https://ask.example.org'}].
    // BOOKWISE_API_URL: the Bookwise server's address when the pages are served from elsewhere (the
    // deploy workflow sets it); unset, the widget asks the site's own origin (`bookwise serve --site`).
    [require('path').resolve(__dirname, '../website-plugin'), {apiUrl: process.env.BOOKWISE_API_URL || ''}],
  ],
  themes: [
    [
      '@docusaurus/theme-classic',
      /** @type {import('@docusaurus/theme-classic').Options} */
      ({customCss: require.resolve('./src/css/custom.css')}),
    ],
  ],
  themeConfig: {
    navbar: {
      title: 'Bookwise',
      items: [{type: 'docSidebar', sidebarId: 'manual', label: 'Manual', position: 'left'}],
    },
  },
};

module.exports = config;
