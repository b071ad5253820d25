// Client module: tells the widget about Docusaurus' client-side navigations (the page does not
// reload, so the widget cannot learn of them from load events). Imported during SSR too.
export function onRouteDidUpdate({location, previousLocation}) {
  if (typeof window === 'undefined' || !previousLocation) return;
  if (location.pathname === previousLocation.pathname) return;
  window.dispatchEvent(new CustomEvent('bookwise:navigate', {detail: {pathname: location.pathname}}));
}
