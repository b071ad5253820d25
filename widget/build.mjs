/**
 * Build the widget into one minified script: widget/dist/bookwise.js, copied to the API's static
 * folder, which `GET /widget.js` serves. Prints its raw and gzip sizes and fails over budget.
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
const DIST = path.join(HERE, 'dist', 'bookwise.js');
const SERVED = path.join(HERE, '..', 'backend', 'bookwise', 'api', 'static', 'widget.js');
// The budget of the product brief. marked 16 + DOMPurify 3 take about 24 kB gzip of it (marked 18
// alone grew by 3.4 kB, which is why marked stays on 16); the widget's code and styles about 9 kB.
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

async function bundle() {
  const { version } = JSON.parse(await readFile(path.join(HERE, 'package.json'), 'utf8'));
  const result = await build({
    entryPoints: [path.join(HERE, 'src', 'index.js')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    // One notice for the bundle and what it includes, instead of each package's comment blocks.
    banner: {
      js: [
        `/*! Bookwise widget ${version} (MIT).`,
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

/** @param {Buffer} code */
function report(code) {
  const gzip = gzipSync(code).length;
  console.log(`widget: ${code.length} bytes, ${gzip} gzip (budget ${GZIP_BUDGET})`);
  return gzip <= GZIP_BUDGET;
}

async function main() {
  const code = await bundle();
  const withinBudget = report(code);
  if (process.argv.includes('--check')) {
    const served = await readFile(SERVED).catch(() => Buffer.alloc(0));
    if (!served.equals(code)) {
      console.error(`${path.relative(process.cwd(), SERVED)} is stale: run node widget/build.mjs`);
      process.exitCode = 1;
    }
  } else {
    await mkdir(path.dirname(DIST), { recursive: true });
    await writeFile(DIST, code);
    await writeFile(SERVED, code);
  }
  if (!withinBudget) {
    console.error(`the widget is over its gzip budget of ${GZIP_BUDGET} bytes`);
    process.exitCode = 1;
  }
}

await main();
