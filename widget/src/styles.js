import css from './styles.css';
import { h } from './dom.js';

/**
 * Style the shadow root. A constructed stylesheet needs no <style> element, so a strict
 * Content-Security-Policy (no 'unsafe-inline' styles) does not block it; old browsers get the
 * element instead.
 *
 * @param {ShadowRoot} root
 */
export function applyStyles(root) {
  if ('adoptedStyleSheets' in root && 'replaceSync' in CSSStyleSheet.prototype) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    root.adoptedStyleSheets = [sheet];
  } else {
    /** @type {ParentNode} */ (root).append(h('style', {}, css));
  }
}
