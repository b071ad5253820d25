/**
 * Model output is hostile Markdown. It is turned into HTML by marked with every risky construct
 * disarmed at the source (raw HTML shown as text, no images, links only within the site, code
 * languages reduced to a safe class), then sanitized by DOMPurify against a short allow-list,
 * and only then given the widget's interactive touches (citation chips, copy buttons) in the DOM.
 */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';

import { linkCitations } from './citations.js';
import { h } from './dom.js';
import { sameSiteUrl } from './urls.js';

// prettier-ignore
const ALLOWED_TAGS = [
  'p', 'br', 'strong', 'em', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'a', 'hr', 'span', 'div',
];
const ALLOWED_ATTR = ['href', 'title', 'class', 'start'];
const COPIED_FOR_MS = 1500;

/** @param {string} text */
function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

const marked = new Marked({
  gfm: true,
  renderer: {
    html({ text, block }) {
      return block ? `<p>${escapeHtml(text)}</p>` : escapeHtml(text);
    },
    image({ text, tokens }) {
      return escapeHtml(tokens ? this.parser.parseInline(tokens, this.parser.textRenderer) : text);
    },
    link({ href, title, tokens }) {
      const label = this.parser.parseInline(tokens);
      const url = sameSiteUrl(href);
      if (!url) return label;
      const tooltip = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(url)}"${tooltip}>${label}</a>`;
    },
    code({ text, lang }) {
      const language = codeLanguage(lang);
      const attribute = language ? ` class="language-${language}"` : '';
      return `<pre><code${attribute}>${escapeHtml(text)}</code></pre>`;
    },
    heading({ tokens, depth }) {
      // The panel has its own title; an answer's headings sit below it.
      const level = Math.min(depth + 2, 6);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>`;
    },
    checkbox({ checked }) {
      return checked ? '☑ ' : '☐ ';
    },
  },
});

/**
 * The fence's first word, when it is a plain name (DocSearch once let a language break out of
 * its class attribute).
 *
 * @param {string | undefined} lang
 */
function codeLanguage(lang) {
  const name = (lang || '').trim().split(/\s/)[0].toLowerCase();
  return /^[a-z0-9-]+$/.test(name) ? name : '';
}

/**
 * Render an answer's Markdown into `target`, replacing what was there. Used for every re-render
 * while tokens stream and for the final one.
 *
 * @param {HTMLElement} target
 * @param {string} markdown
 * @param {{ n: number, url: string }[]} sources
 */
export function renderMarkdown(target, markdown, sources) {
  const html = /** @type {string} */ (marked.parse(markdown));
  const fragment = DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
  linkCitations(fragment, sources);
  for (const link of fragment.querySelectorAll('a')) link.rel = 'noopener noreferrer';
  for (const pre of fragment.querySelectorAll('pre')) addCopyButton(pre);
  target.replaceChildren(fragment);
}

/** @param {HTMLPreElement} pre */
function addCopyButton(pre) {
  const wrapper = h('div', { class: 'bw-code' });
  pre.replaceWith(wrapper);
  wrapper.append(pre, h('button', { class: 'bw-copy', 'data-bw': 'copy', onclick: copy }, 'Copy'));

  /** @param {Event} event */
  async function copy(event) {
    const button = /** @type {HTMLButtonElement} */ (event.currentTarget);
    try {
      await navigator.clipboard.writeText(pre.textContent || '');
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Copy failed';
    }
    setTimeout(() => (button.textContent = 'Copy'), COPIED_FOR_MS);
  }
}
