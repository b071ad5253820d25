/**
 * Mirror the site's colour mode (Docusaurus sets `data-theme` on <html>) onto the widget's host,
 * so the widget's own fallback colours switch with it; the site's CSS variables inherit anyway.
 *
 * @param {HTMLElement} host
 * @returns {() => void}  Stops following.
 */
export function followTheme(host) {
  const html = document.documentElement;
  const mirror = () => host.setAttribute('data-theme', html.dataset.theme === 'dark' ? 'dark' : 'light');
  const observer = new MutationObserver(mirror);
  observer.observe(html, { attributes: true, attributeFilter: ['data-theme'] });
  mirror();
  return () => observer.disconnect();
}
