/**
 * Build the widget into three minified scripts, copied to the API's static folder: the widget itself
 * (widget/dist/bookwise.js, which `GET /widget.js` serves), its Markdown renderer
 * (widget/dist/bookwise-markdown.js, `GET /widget-markdown.js`), which the widget loads when its panel
 * first opens, and its search modal (widget/dist/bookwise-search.js, `GET /widget-search.js`), loaded
 * when the reader first searches. Prints their raw and gzip sizes and fails when one is over budget.
 *
 *   node widget/build.mjs          build and write
 *   node widget/build.mjs --check  build in memory; fail if the served bundle differs (CI)
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { build, transform } from 'esbuild';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const STATIC = path.join(HERE, '..', 'backend', 'bookwise', 'api', 'static');
const BUNDLES = [
  { entry: 'index.js', dist: 'bookwise.js', served: 'widget.js' },
  { entry: 'markdown-entry.js', dist: 'bookwise-markdown.js', served: 'widget-markdown.js' },
  { entry: 'search-entry.js', dist: 'bookwise-search.js', served: 'widget-search.js' },
];
// The budget of the product brief, for what a page loads before the reader opens the panel. marked 16
// + DOMPurify 3 take about 23 kB gzip (marked 18 alone grew by 3.4 kB, which is why marked stays on
// 16): they are the renderer, loaded on first open; the widget's code and styles about 14 kB.
const GZIP_BUDGET = 35_000;

/** Imported .css files become minified strings (the widget adopts them as a stylesheet). */
const cssAsMinifiedText = {
  name: 'css-as-minified-text',
  /** @param {import('esbuild').PluginBuild} pluginBuild */
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /\.css$/ }, async ({ path: file }) => {
      const { code } = await transform(await readFile(file, 'utf8'), { loader: 'css', minify: true });
      return { contents: code.trim(), loader: 'text' };
    });
  },
};

/** @param {string} entry */
async function bundle(entry) {
  const { version } = JSON.parse(await readFile(path.join(HERE, 'package.json'), 'utf8'));
  const result = await build({
    entryPoints: [path.join(HERE, 'src', entry)],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    // One notice for the bundle and what it includes, instead of each package's comment blocks.
    banner: {
      js:
        entry !== 'markdown-entry.js'
          ? `/*! Bookwise widget ${version}${entry === 'search-entry.js' ? ', search' : ''} (MIT). */`
          : [
              `/*! Bookwise widget ${version}, Markdown renderer (MIT).`,
              ' * Includes marked, (c) MarkedJS and Christopher Jeffrey (MIT),',
              ' * and DOMPurify, (c) Cure53 and other contributors (Apache-2.0 or MPL-2.0). */',
            ].join('\n'),
    },
    legalComments: 'none',
    define: { 'process.env.BOOKWISE_VERSION': JSON.stringify(version) },
    plugins: [cssAsMinifiedText],
    logLevel: 'warning',
  });
  return Buffer.from(result.outputFiles[0].contents);
}

/**
 * @param {string} name
 * @param {Buffer} code
 */
function report(name, code) {
  const gzip = gzipSync(code).length;
  console.log(`${name}: ${code.length} bytes, ${gzip} gzip (budget ${GZIP_BUDGET})`);
  return gzip <= GZIP_BUDGET;
}

async function main() {
  for (const { entry, dist, served: name } of BUNDLES) {
    const code = await bundle(entry);
    const withinBudget = report(name, code);
    const served = path.join(STATIC, name);
    if (process.argv.includes('--check')) {
      const current = await readFile(served).catch(() => Buffer.alloc(0));
      if (!current.equals(code)) {
        console.error(`${path.relative(process.cwd(), served)} is stale: run node widget/build.mjs`);
        process.exitCode = 1;
      }
    } else {
      await mkdir(path.join(HERE, 'dist'), { recursive: true });
      await writeFile(path.join(HERE, 'dist', dist), code);
      await writeFile(served, code);
    }
    if (!withinBudget) {
      console.error(`${name} is over its gzip budget of ${GZIP_BUDGET} bytes`);
      process.exitCode = 1;
    }
  }
}

await main();
