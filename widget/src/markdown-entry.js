/** The renderer's own script (see render.js): hands renderMarkdown to the widget that loaded it. */
import { renderMarkdown } from './markdown.js';

window.__bookwiseMarkdown?.(renderMarkdown);
