/**
 * A page just big enough for the widget's script loaders (render.js, search.js): `window`, and a
 * `document` whose <head> keeps the scripts appended to it. The test plays the browser: it runs a
 * script (its `onload`, after the script's own call to `window`), or fails it (`onerror`).
 *
 * @typedef {{ src?: string, onerror?: () => void, onload?: () => void, removed?: boolean, remove(): void }} FakeScript
 */

/** Install the page on the globals; returns the scripts appended so far and `window`. */
export function scriptPage() {
  /** @type {FakeScript[]} */
  const appended = [];
  const global = /** @type {Record<string, unknown>} */ (globalThis);
  global.window = {};
  global.document = {
    createElement: () => {
      /** @type {FakeScript} */
      const script = {
        remove() {
          script.removed = true;
        },
      };
      return script;
    },
    head: { append: (/** @type {FakeScript} */ script) => appended.push(script) },
  };
  return { appended, page: /** @type {Window} */ (global.window) };
}
