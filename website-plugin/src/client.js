// Client module: tells the widget about Docusaurus' client-side navigations (the page does not
// reload, so the widget cannot learn of them from load events), and when React has hydrated the page
// (the first route update): only then may the widget add its buttons to the page (code blocks, navbar)
// without React discarding the server-rendered markup. Imported during SSR too.
export function onRouteDidUpdate({location, previousLocation}) {
  if (typeof window === 'undefined') return;
  if (!previousLocation) {
    document.documentElement.setAttribute('data-bookwise-hydrated', '');
    window.dispatchEvent(new CustomEvent('bookwise:hydrated'));
    return;
  }
  if (location.pathname === previousLocation.pathname) return;
  window.dispatchEvent(new CustomEvent('bookwise:navigate', {detail: {pathname: location.pathname}}));
}
