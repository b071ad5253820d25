/**
 * The widget's second scripts (the Markdown renderer, the search box) are loaded from beside its own
 * when first needed; each hands its module over by calling a function the widget put on `window`.
 */

/**
 * @typedef {'__bookwiseMarkdown' | '__bookwiseSearch'} Ready
 */

/**
 * Load the script at `url`, which calls `window[ready]` with its module as it runs. Fails when the
 * script does not load, or runs without handing the module over (a page served in its place, an
 * error in it): nothing then waits on it for ever, and the caller may try again.
 *
 * @template {Ready} K
 * @param {string} url
 * @param {K} ready
 * @param {string} what  What the script is, for the error.
 * @returns {Promise<Parameters<NonNullable<Window[K]>>[0]>}
 */
export function loadSibling(url, ready, what) {
  return new Promise((resolve, reject) => {
    let started = false;
    /** @type {(module: Parameters<NonNullable<Window[K]>>[0]) => void} */
    const handOver = (module) => {
      started = true;
      resolve(module);
    };
    /** @type {Record<Ready, unknown>} */ (/** @type {unknown} */ (window))[ready] = handOver;
    const script = document.createElement('script');
    script.src = url;
    const failed = (/** @type {string} */ how) => {
      script.remove();
      reject(new Error(`the widget's ${what} ${how} ${url}`));
    };
    script.onerror = () => failed('did not load from');
    script.onload = () => started || failed('did not start from');
    document.head.append(script);
  });
}
