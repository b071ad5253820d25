'use strict';

/**
 * The URL rule of the Markdown twins that `bookwise llms` writes (backend/bookwise/ingest/llms.py,
 * `twin_url`): the page's path + ".md", the trailing slash dropped first, the site's root page → index.md.
 * `/docs/intro` and `/docs/intro/` → `/docs/intro.md`. CommonJS so node's test runner loads it as is.
 * @param {string} pathname  The page's path, e.g. `location.pathname` (a hash or query is dropped).
 * @param {string} [baseUrl]  The site's baseUrl, e.g. "/" or "/book/".
 * @returns {string}
 */
function twinPath(pathname, baseUrl = '/') {
  const path = pathname.split(/[?#]/, 1)[0];
  const trimmed = baseUrl.replace(/^\/+|\/+$/g, '');
  const base = trimmed ? `/${trimmed}/` : '/';
  if (path === '' || path === '/' || path.replace(/\/+$/, '') + '/' === base) return `${base}index.md`;
  return `${path.replace(/\/+$/, '')}.md`;
}

/**
 * The "Open in …" links: the assistant is asked to read the twin's absolute URL.
 * @param {string} twinUrl  Absolute URL of the page's twin.
 * @returns {{chatgpt: string, claude: string}}
 */
function assistantLinks(twinUrl) {
  const q = encodeURIComponent(`Read ${twinUrl} so I can ask questions about it.`);
  return {chatgpt: `https://chatgpt.com/?q=${q}`, claude: `https://claude.ai/new?q=${q}`};
}

module.exports = {twinPath, assistantLinks};
