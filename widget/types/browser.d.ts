// What the widget's sources add to the browser's API: the page's handle on the widget, the renderer's
// hand-over, and stylesheet imports.

/** Imported .css files are the minified stylesheet's text (build.mjs). */
declare module '*.css' {
  const css: string;
  export default css;
}

/** What `window.Bookwise.ask` takes beside the question. */
interface BookwiseAskOptions {
  /** The passage the question is about. */
  selectedText?: string;
  /** Its section's heading id. */
  headingId?: string;
  scope?: import('../src/conversation.js').Scope;
  /** A study action of the API. */
  action?: import('../src/conversation.js').Action;
}

/** `window.Bookwise`: there from the script's first run, before the widget mounts (index.js). */
interface BookwiseApi {
  readonly version: string;
  open(): void;
  close(): void;
  /**
   * Opens the panel; resolves with how the answer ended: done, error, stopped (or empty: nothing asked),
   * once the answer shows as it stays (rendered, citation chips and all).
   */
  ask(question: string, options?: BookwiseAskOptions): Promise<string>;
  destroy(): void;
}

interface Window {
  Bookwise?: BookwiseApi;
  /** Set while the Markdown renderer's script loads; that script calls it with the renderer (render.js). */
  __bookwiseMarkdown?: (render: import('../src/render.js').Render) => void;
  /** Set while the search modal's script loads; that script calls it with the modal (search.js). */
  __bookwiseSearch?: (modal: typeof import('../src/search-modal.js').SearchModal) => void;
}
