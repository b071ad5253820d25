import assert from 'node:assert/strict';
import test from 'node:test';

import { DEFAULT_CONTENT_SELECTOR, readConfig, showsOn } from '../src/config.js';

/** A script tag's dataset, as the Docusaurus plugin writes it. */
const script = (/** @type {Record<string, string>} */ data) =>
  /** @type {HTMLScriptElement} */ (
    /** @type {unknown} */ ({ dataset: { apiUrl: 'https://ask.example.org', ...data } })
  );

test('paths are after the baseUrl: a site at /book/ shows the widget on /book/docs/… (it never showed)', () => {
  const config = readConfig(script({ paths: '/docs/', baseUrl: '/book/' }));
  assert.equal(config.baseUrl, '/book/');
  assert.equal(showsOn(config, '/book/docs/intro'), true);
  assert.equal(showsOn(config, '/book/docs/'), true);
  assert.equal(showsOn(config, '/book/blog/post'), false);
  assert.equal(showsOn(config, '/docs/intro'), false); // outside the site
  assert.equal(showsOn(config, '/bookshelf/docs/intro'), false); // a sibling path is not the base
});

test('a site at the root, and no paths at all', () => {
  const root = readConfig(script({ paths: '/docs/, /guides' }));
  assert.equal(root.baseUrl, '/');
  assert.deepEqual(root.paths, ['/docs/', '/guides']);
  assert.equal(showsOn(root, '/docs/a'), true);
  assert.equal(showsOn(root, '/guides/b'), true);
  assert.equal(showsOn(root, '/blog'), false);
  assert.equal(showsOn(readConfig(script({ baseUrl: '/book/' })), '/anything'), true);
});

test('a paths entry of "/" covers the whole site under its baseUrl', () => {
  const config = readConfig(script({ paths: '/', baseUrl: '/book' }));
  assert.equal(showsOn(config, '/book'), true);
  assert.equal(showsOn(config, '/book/x'), true);
  assert.equal(showsOn(config, '/other'), false);
});

test("the owner's options: example questions, disclaimer, accent, corner, label, navbar item", () => {
  const config = readConfig(
    script({
      title: 'Ask Robot Motion',
      examples: JSON.stringify(['What is odometry?', '', 3]),
      disclaimer: 'Check the sections.',
      accent: '#c0392b',
      position: 'left',
      launcherLabel: 'Ask',
      navbar: 'true',
    }),
  );
  assert.deepEqual(config.examples, ['What is odometry?']); // blanks and non-strings dropped
  assert.equal(config.disclaimer, 'Check the sections.');
  assert.equal(config.accent, '#c0392b');
  assert.equal(config.position, 'left');
  assert.equal(config.label, 'Ask');
  assert.equal(config.navbar, true);
  const plain = readConfig(script({ title: 'Ask Robot Motion', examples: 'not json' }));
  assert.deepEqual(plain.examples, []);
  assert.equal(plain.position, 'right');
  assert.equal(plain.label, 'Ask Robot Motion'); // the title, when no label is set
  assert.equal(plain.navbar, false);
});

test("the content selector and the selection cap are the owner's only when set", () => {
  const plain = readConfig(script({}));
  assert.equal(plain.contentSelector, DEFAULT_CONTENT_SELECTOR);
  assert.match(plain.contentSelector, /\.theme-doc-markdown/); // docs…
  assert.match(plain.contentSelector, /article \.markdown/); // …and blog posts
  assert.equal(plain.maxSelection, 0); // none: the server's limit applies
  const owned = readConfig(script({ contentSelector: '.book', maxSelection: '500' }));
  assert.equal(owned.contentSelector, '.book');
  assert.equal(owned.maxSelection, 500);
  assert.equal(readConfig(script({ maxSelection: 'lots' })).maxSelection, 0);
  assert.equal(readConfig(script({ maxSelection: '-5' })).maxSelection, 0);
});

test('what the reader asks about follows the title: "Ask My Site" asks about My Site', () => {
  const titles = ['Ask the book', 'Ask My Site', 'Ask about Robot Motion?', 'ask  the docs …', 'Hi', 'Ask'];
  assert.deepEqual(
    titles.map((title) => readConfig(script({ title })).subject),
    ['the book', 'My Site', 'Robot Motion', 'the docs', 'the book', 'the book'],
  );
  assert.equal(readConfig(script({ title: 'Ask My Site' })).placeholder, 'Ask a question about My Site…');
  const owned = readConfig(script({ title: 'Ask My Site', placeholder: 'Type here' }));
  assert.equal(owned.placeholder, 'Type here'); // the owner's own placeholder wins
  assert.equal(readConfig(script({})).subject, 'the book');
});
