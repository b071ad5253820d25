/** The search modal's own script (see search.js): hands the modal to the widget that loaded it. */
import { SearchModal } from './search-modal.js';

window.__bookwiseSearch?.(SearchModal);
