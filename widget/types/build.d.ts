// What the build (build.mjs, esbuild) provides to the sources beyond the browser's own API.

/** `process.env.BOOKWISE_VERSION` is replaced by the package's version at build time. */
declare const process: { readonly env: { readonly BOOKWISE_VERSION: string } };
