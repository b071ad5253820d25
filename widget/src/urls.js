/** Links out of the widget: which are allowed, and how to follow them like the site's own links. */

const ANCHOR_WAIT_MS = 3000;
const ANCHOR_POLL_MS = 100;
const SCROLL_KEY = 'bookwiseScrollY';

/**
 * The absolute URL of `href` when it stays on this site over http(s), else null. Resolving with
 * URL first means tabs, newlines, case and relative tricks are judged as the browser would judge
 * them; returning the absolute form means no `//host` path can turn into another origin later.
 *
 * @param {string} href
 * @returns {string | null}
 */
export function sameSiteUrl(href) {
  let url;
  try {
    url = new URL(href, location.href);
  } catch {
    return null;
  }
  const web = url.protocol === 'http:' || url.protocol === 'https:';
  return web && url.origin === location.origin ? url.href : null;
}

/**
 * Follow a link of this site in this tab, as the site's own links do: the route changes through
 * the History API, so a single-page app (Docusaurus listens to popstate) renders it without a
 * reload; then the anchor is scrolled to once the new page has it.
 *
 * A link within the page adds a history entry too, which remembers where the reader was, so Back
 * returns there (see `returnOnBack`).
 *
 * @param {string} href  A URL that `sameSiteUrl` accepted.
 * @param {(target: Element) => void} [onLand]  Called with the anchor's element once scrolled to.
 */
export function navigate(href, onLand = () => {}) {
  const url = new URL(href);
  const { hash, anchor } = landing(url);
  const samePage = url.pathname === location.pathname && url.search === location.search;
  if (samePage) {
    history.replaceState({ ...history.state, [SCROLL_KEY]: window.scrollY }, '');
    history.pushState({ ...history.state, [SCROLL_KEY]: null }, '', url.pathname + url.search + hash);
    if (anchor) scrollToAnchor(anchor, 0, onLand);
    return;
  }
  history.pushState({}, '', url.pathname + url.search + hash);
  window.dispatchEvent(new PopStateEvent('popstate'));
  // Not at once: the page being left may have the same id, and the new page renders later.
  if (anchor) setTimeout(scrollToAnchor, ANCHOR_POLL_MS, anchor, Date.now() + ANCHOR_WAIT_MS, onLand);
}

/**
 * Back (or Forward) to an entry `navigate` left restores where the reader had scrolled to.
 *
 * @returns {() => void}  Stops.
 */
export function returnOnBack() {
  /** @param {PopStateEvent} event */
  const restore = (event) => {
    const y = event.state?.[SCROLL_KEY];
    // After the site's own popstate handling, which may scroll to the top or to a hash.
    if (typeof y === 'number') requestAnimationFrame(() => window.scrollTo(0, y));
  };
  window.addEventListener('popstate', restore);
  return () => window.removeEventListener('popstate', restore);
}

/**
 * Where a link lands: its hash without a text fragment (selected-text sources carry
 * `#anchor:~:text=…`, which is not part of the id), and the id it names, decoded ("" for none).
 *
 * @param {URL} url
 */
export function landing(url) {
  const hash = url.hash.split(':~:')[0].replace(/^#$/, '');
  let anchor = hash.slice(1);
  try {
    anchor = decodeURIComponent(anchor);
  } catch {
    // Not percent-encoded text (`#100%`): the id is as written.
  }
  return { hash, anchor };
}

/**
 * @param {string} id
 * @param {number} deadline
 * @param {(target: Element) => void} onLand
 */
function scrollToAnchor(id, deadline, onLand) {
  const target = document.getElementById(id);
  if (target) {
    target.scrollIntoView();
    onLand(target);
  } else if (Date.now() < deadline) setTimeout(scrollToAnchor, ANCHOR_POLL_MS, id, deadline, onLand);
}
