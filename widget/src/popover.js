/** The study actions that float by the reader's selection: ask, explain, example, quiz. */
import { h } from './dom.js';

/**
 * @typedef {import('./page.js').PlacedSelection} PlacedSelection
 * @typedef {import('./conversation.js').Action} Action
 */

const GAP = 8;
/** @type {[Action, string, string][]} Each action, its `data-bw` hook and its label. */
const ACTIONS = [
  ['ask', 'popover', 'Ask about this'],
  ['explain', 'popover-explain', 'Explain simply'],
  ['example', 'popover-example', 'Give an example'],
  ['quiz', 'popover-quiz', 'Quiz me on this'],
];

/** Explain's label without a model: it shows where the book introduces the passage's terms. */
export const EXPLAIN_WITHOUT_MODEL = 'Define its terms';

export class Popover {
  /** @type {PlacedSelection | null} */
  #selection = null;

  /** @param {import('./limits.js').Answers} answers  Who answers: each button promises what happens. */
  answeredBy(answers) {
    const explain = this.element.querySelector('[data-bw="popover-explain"]');
    if (explain) explain.textContent = answers === 'llm' ? 'Explain simply' : EXPLAIN_WITHOUT_MODEL;
  }

  /** @param {(selection: PlacedSelection, action: Action) => void} onAction */
  constructor(onAction) {
    this.element = h(
      'div',
      {
        class: 'bw-popover',
        'data-bw': 'popover-group',
        role: 'group',
        'aria-label': 'Study the selection',
        hidden: true,
        // Keep the page's selection: pressing a button would otherwise clear it first.
        onmousedown: (event) => event.preventDefault(),
      },
      ACTIONS.map(([action, name, label]) =>
        h(
          'button',
          {
            'data-bw': name,
            onclick: () => {
              if (this.#selection) onAction(this.#selection, action);
              this.offer(null);
            },
          },
          label,
        ),
      ),
    );
  }

  /**
   * Offer the actions on `selection`, below it or, when there is no room, above it; null hides.
   *
   * @param {PlacedSelection | null} selection
   */
  offer(selection) {
    this.#selection = selection;
    const popover = this.element;
    popover.hidden = !selection;
    if (!selection) return;
    const { rect } = selection;
    const { offsetWidth: width, offsetHeight: height } = popover;
    const fitsBelow = rect.bottom + GAP + height <= window.innerHeight;
    const top = fitsBelow ? rect.bottom + GAP : rect.top - GAP - height;
    const centered = rect.left + rect.width / 2 - width / 2;
    popover.style.top = `${Math.max(GAP, top)}px`;
    popover.style.left = `${Math.max(GAP, Math.min(centered, window.innerWidth - width - GAP))}px`;
  }
}
