/**
 * @typedef {Record<string, string | number | boolean | EventListener | null | undefined>} Props
 * @typedef {Node | string | null | undefined | false} Child
 */

/**
 * Create an element. Function props (`onclick: fn`) become event listeners, others attributes
 * (`true` → empty, `false`/`null` → absent); string children become text nodes, so nothing here
 * parses HTML.
 *
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Props} [props]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child != null && child !== false) element.append(child);
  }
  return element;
}
