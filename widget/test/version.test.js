import assert from 'node:assert/strict';
import test from 'node:test';

import { compatible, versionMismatch } from '../src/version.js';

test('same major is compatible; for 0.x the minor must match too', () => {
  assert.equal(compatible('1.2.0', '1.9.3'), true);
  assert.equal(compatible('1.2.0', '2.0.0'), false);
  assert.equal(compatible('0.1.0', '0.1.7'), true);
  assert.equal(compatible('0.1.0', '0.2.0'), false);
  assert.equal(compatible('0.2.0', '1.0.0'), false);
});

test('an unknown version (an older server that does not tell) is not a mismatch', () => {
  assert.equal(compatible(null, '0.1.0'), true);
  assert.equal(versionMismatch({ server: null, widget: '0.2.0', plugin: '0.2.0' }), '');
  assert.equal(versionMismatch({ server: '0.2.0', widget: '0.2.1', plugin: '' }), '');
});

test('an older server: the notice names both versions and says to upgrade the server', () => {
  const text = versionMismatch({ server: '0.1.0', widget: '0.1.0', plugin: '0.2.0' });
  assert.match(text, /server is 0\.1\.0/);
  assert.match(text, /docusaurus-plugin-bookwise is 0\.2\.0/);
  assert.match(text, /Upgrade the Bookwise server to 0\.2\.x\./);
});

test('an older plugin: the notice says to upgrade the plugin', () => {
  const text = versionMismatch({ server: '1.0.0', widget: '1.0.0', plugin: '0.3.2' });
  assert.match(text, /server is 1\.0\.0, this site's docusaurus-plugin-bookwise is 0\.3\.2/);
  assert.match(text, /Upgrade docusaurus-plugin-bookwise to 1\.0\.x\./);
});

test('a widget from elsewhere than the server is checked too', () => {
  const text = versionMismatch({ server: '0.3.0', widget: '0.2.0', plugin: '0.3.0' });
  assert.match(text, /widget is 0\.2\.0/);
  assert.match(text, /Upgrade widget to 0\.3\.x\./);
});
