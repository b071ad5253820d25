// Client module (added when `pageActions: true`): "Copy page as Markdown", "Open in ChatGPT" and
// "Open in Claude" under a doc page's title, from the page's `.md` twin that `bookwise llms` writes
// into the build. Plain DOM from the route lifecycle instead of a swizzled theme component, so it
// survives theme upgrades; every render first removes the previous group, so it is idempotent.
import siteConfig from '@generated/docusaurus.config';
import {assistantLinks, twinPath} from './twin';
import './page-actions.css';

const GROUP = 'data-bookwise-actions';
const RESET_MS = 2500;

// The theme renders a doc's title (Markdown `# Title` or front matter) as `<header><h1>`; generated
// category pages, tag lists and custom pages have no `.theme-doc-markdown`, so they get no actions.
function docTitle() {
  return (
    document.querySelector('article .theme-doc-markdown header h1') ||
    document.querySelector('article .theme-doc-markdown h1')
  );
}

function element(tag, attributes, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text) node.textContent = text;
  return node;
}

async function twinText(url) {
  const response = await fetch(url, {headers: {Accept: 'text/markdown, text/plain'}});
  // A host's single-page fallback answers a missing file with the HTML page: not Markdown.
  if (!response.ok || (response.headers.get('content-type') || '').includes('text/html')) {
    throw new Error(`no Markdown at ${url}`);
  }
  return response.text();
}

async function copyTwin(url) {
  const text = twinText(url);
  // A ClipboardItem given a promise keeps the click's user activation through the fetch (Safari
  // refuses writeText after an await); browsers without one get writeText.
  if (typeof ClipboardItem !== 'undefined' && navigator.clipboard && navigator.clipboard.write) {
    const blob = text.then((value) => new Blob([value], {type: 'text/plain'}));
    await navigator.clipboard.write([new ClipboardItem({'text/plain': blob})]);
  } else {
    await navigator.clipboard.writeText(await text);
  }
}

function copyButton(url, status) {
  const label = 'Copy page as Markdown';
  const button = element(
    'button',
    {type: 'button', class: 'button button--secondary button--outline button--sm', 'data-bookwise-action': 'copy'},
    label,
  );
  let timer;
  button.addEventListener('click', async () => {
    clearTimeout(timer);
    let state = 'copied';
    try {
      await copyTwin(url);
    } catch {
      state = 'error';
    }
    button.textContent = state === 'copied' ? 'Copied' : 'Copy failed';
    button.dataset.state = state;
    status.textContent =
      state === 'copied' ? 'Page copied to the clipboard as Markdown.' : 'Could not copy the page as Markdown.';
    timer = setTimeout(() => {
      button.textContent = label;
      delete button.dataset.state;
      status.textContent = '';
    }, RESET_MS);
  });
  return button;
}

function openLink(name, href, assistant) {
  return element(
    'a',
    {
      class: 'button button--secondary button--outline button--sm',
      href,
      target: '_blank',
      rel: 'noopener noreferrer',
      'aria-label': `Open in ${assistant} (new tab): asks it to read this page's Markdown`,
      'data-bookwise-action': name,
    },
    `Open in ${assistant}`,
  );
}

function render(pathname) {
  document.querySelectorAll(`[${GROUP}]`).forEach((node) => node.remove());
  const title = docTitle();
  if (!title) return;
  const path = twinPath(pathname, siteConfig.baseUrl);
  const absolute = new URL(path, window.location.origin).href;
  const links = assistantLinks(absolute);
  const group = element('div', {[GROUP]: '', class: 'bookwise-page-actions', role: 'group', 'aria-label': 'Page actions'});
  const status = element('span', {role: 'status', 'aria-live': 'polite', class: 'bookwise-page-actions__status'});
  group.append(
    copyButton(path, status),
    openLink('chatgpt', links.chatgpt, 'ChatGPT'),
    openLink('claude', links.claude, 'Claude'),
    status,
  );
  title.insertAdjacentElement('afterend', group);
}

// Runs after every route render, the first one included (then previousLocation is null).
export function onRouteDidUpdate({location}) {
  if (typeof window === 'undefined') return;
  render(location.pathname);
}
