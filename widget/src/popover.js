/** The "Ask about this" button that floats by the reader's selection. */
import { h } from './dom.js';

/** @typedef {import('./page.js').PlacedSelection} PlacedSelection */

const GAP = 8;

export class Popover {
  /** @type {PlacedSelection | null} */
  #selection = null;

  /** @param {(selection: PlacedSelection) => void} onAsk */
  constructor(onAsk) {
    this.element = h(
      'button',
      {
        class: 'bw-popover',
        'data-bw': 'popover',
        hidden: true,
        // Keep the page's selection: pressing a button would otherwise clear it first.
        onmousedown: (event) => event.preventDefault(),
        onclick: () => {
          if (this.#selection) onAsk(this.#selection);
          this.offer(null);
        },
      },
      'Ask about this',
    );
  }

  /**
   * Offer to ask about `selection`, below it or, when there is no room, above it; null hides.
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
