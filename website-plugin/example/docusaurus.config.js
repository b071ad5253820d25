// @ts-check
// Robot Motion, the example textbook of Bookwise: the demo's content and the end-to-end fixture.
// The docs plugin + classic theme without preset-classic, so no Algolia search packages are needed.

/** @type {import('@docusaurus/types').Config} */
const config = {
  title: 'Robot Motion',
  tagline: 'A short course on how mobile robots move, sense and stay on track',
  url: 'http://127.0.0.1:8000',
  baseUrl: '/',
  favicon: 'img/favicon.svg', // browsers ask for one on every page; without it, a 404 in the console
  onBrokenLinks: 'throw',
  // As a site made today by create-docusaurus: the v4 flags, which build with Docusaurus Faster
  // (Rspack and SWC, @docusaurus/faster) in a fifth of the time. v4 turns MDX 1's compatibility
  // off; the book's `{#id}` heading ids need it.
  future: {v4: true},
  markdown: {mdx1Compat: {comments: true, admonitions: true, headingIds: true}},
  i18n: {defaultLocale: 'en', locales: ['en']},
  plugins: [
    [
      '@docusaurus/plugin-content-docs',
      /** @type {import('@docusaurus/plugin-content-docs').Options} */
      ({path: 'docs', routeBasePath: 'docs', sidebarPath: require.resolve('./sidebars.js')}),
    ],
    '@docusaurus/plugin-content-pages',
  ],
  themes: [
    [
      '@docusaurus/theme-classic',
      /** @type {import('@docusaurus/theme-classic').Options} */
      ({customCss: require.resolve('./src/css/custom.css')}),
    ],
    [
      // Two lines are all a site needs; everything else has defaults. The API runs on the
      // site's own origin in the demo (`bookwise serve --site build`), so no apiUrl is set.
      // Listed under `themes`, after the classic theme, because `search: true` makes it the theme's
      // search bar (themes load after plugins; with preset-classic, `plugins` is enough).
      'docusaurus-plugin-bookwise',
      // pageActions: "Copy page as Markdown" / "Open in ChatGPT|Claude" from the `.md` twins that
      // `bookwise llms` writes into the build. navbarItem: an "Ask the book" item in the navbar.
      // search: the search box (Ctrl+K) in the navbar. The index version (showIndexVersion) stays
      // off: a raw index id means nothing to readers.
      {
        title: 'Ask Robot Motion',
        pageActions: true,
        navbarItem: true,
        search: true,
        launcherLabel: 'Ask the book',
        apiUrl: process.env.BOOKWISE_API_URL || '',
      },
    ],
  ],
  themeConfig: {
    navbar: {
      title: 'Robot Motion',
      items: [{type: 'docSidebar', sidebarId: 'textbook', label: 'Textbook', position: 'left'}],
    },
    footer: {style: 'dark', copyright: 'Robot Motion: an example textbook for Bookwise (MIT).'},
  },
};

module.exports = config;
