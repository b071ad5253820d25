// What the build (build.mjs, esbuild) provides to the sources beyond the browser's own API.

/** Imported .css files are the minified stylesheet's text. */
declare module '*.css' {
  const css: string;
  export default css;
}

/** `process.env.BOOKWISE_VERSION` is replaced by the package's version at build time. */
declare const process: { readonly env: { readonly BOOKWISE_VERSION: string } };

/** What the widget's two scripts put on `window`. */
interface Window {
  /** The page's handle on the widget (index.js). */
  Bookwise?: import('../src/index.js').BookwiseApi;
  /** Set while the Markdown renderer's script loads; that script calls it with the renderer (render.js). */
  __bookwiseMarkdown?: (render: import('../src/render.js').Render) => void;
}
