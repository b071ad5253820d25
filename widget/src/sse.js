/**
 * A Server-Sent Events parser for streams read with fetch (EventSource cannot POST).
 *
 * Follows the WHATWG event-stream format: lines end in CRLF, LF or CR; a blank line dispatches
 * the event; `data:` lines accumulate, joined by newlines; `:` lines are comments; one space
 * after the colon is dropped; `id` and `retry` are ignored (nothing here reconnects). Chunks may
 * split the stream anywhere, even between the CR and LF of one line ending.
 */

/**
 * @typedef {{ event: string, data: string }} SseEvent
 * @typedef {{ push(chunk: string): void }} SseParser
 */

/**
 * @param {(event: SseEvent) => void} onEvent
 * @returns {SseParser}
 */
export function createSseParser(onEvent) {
  let buffer = '';
  let skipLeadingLF = false;
  let eventName = '';
  /** @type {string[]} */
  let data = [];

  /** @param {string} line */
  function readLine(line) {
    if (line === '') {
      if (data.length) onEvent({ event: eventName || 'message', data: data.join('\n') });
      eventName = '';
      data = [];
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) return;
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') eventName = value;
    else if (field === 'data') data.push(value);
  }

  return {
    push(chunk) {
      if (!chunk) return;
      if (skipLeadingLF && chunk.startsWith('\n')) chunk = chunk.slice(1);
      // A trailing CR ends its line now; if the next chunk starts with LF, that LF belongs to it.
      skipLeadingLF = chunk.endsWith('\r');
      buffer += chunk;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop() ?? '';
      lines.forEach(readLine);
    },
  };
}
