'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const {twinPath, assistantLinks} = require('../src/twin');

test('a page URL gains .md; a trailing slash goes first', () => {
  assert.equal(twinPath('/docs/intro'), '/docs/intro.md');
  assert.equal(twinPath('/docs/intro/'), '/docs/intro.md');
  assert.equal(twinPath('/docs/control/pid-control'), '/docs/control/pid-control.md');
});

test('a hash or query is not part of the twin', () => {
  assert.equal(twinPath('/docs/intro#goals'), '/docs/intro.md');
  assert.equal(twinPath('/docs/intro/?x=1'), '/docs/intro.md');
});

test('the site root (with or without a baseUrl) is index.md', () => {
  assert.equal(twinPath('/'), '/index.md');
  assert.equal(twinPath('/book/', '/book/'), '/book/index.md');
  assert.equal(twinPath('/book', '/book/'), '/book/index.md');
  assert.equal(twinPath('/book/docs/intro/', '/book/'), '/book/docs/intro.md');
});

test('the Open-in links ask the assistant to read the absolute twin URL, encoded', () => {
  const links = assistantLinks('https://example.org/docs/a b.md');
  const prompt = 'Read https://example.org/docs/a b.md so I can ask questions about it.';
  assert.equal(links.chatgpt, `https://chatgpt.com/?q=${encodeURIComponent(prompt)}`);
  assert.equal(links.claude, `https://claude.ai/new?q=${encodeURIComponent(prompt)}`);
  assert.equal(new URL(links.claude).searchParams.get('q'), prompt);
  assert.ok(!links.chatgpt.includes(' '));
});
