'use strict';

// What `npm pack` puts in the package: what a site needs to run the plugin, and nothing else
// (no tests, no example site, no lockfile, no node_modules).

const test = require('node:test');
const assert = require('node:assert/strict');
const {execFileSync} = require('child_process');
const path = require('path');

const HERE = path.join(__dirname, '..');

test('the packed tarball holds only the plugin', () => {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const out = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: HERE,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [packed] = JSON.parse(out);
  const {name, version} = require('../package.json');
  assert.equal(packed.filename, `${name}-${version}.tgz`);
  const files = packed.files.map((file) => file.path).sort();
  assert.deepEqual(files, [
    'LICENSE',
    'README.md',
    'index.js',
    'package.json',
    'src/client.js',
    'src/manifest.js',
    'src/options.js',
    'src/page-actions.css',
    'src/page-actions.js',
    'src/theme/SearchBar/index.js',
    'src/theme/SearchBar/styles.css',
    'src/twin.js',
  ]);
});

test('what the plugin requires at run time is a declared dependency, not a dev-only one', () => {
  const pkg = require('../package.json');
  assert.equal(pkg.dependencies.htmlparser2 !== undefined, true);
  assert.equal(pkg.devDependencies, undefined);
  assert.equal(pkg.main, 'index.js');
});
