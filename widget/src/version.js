/**
 * Whether this site's Bookwise pieces and the Bookwise server speak the same API. The widget bakes
 * in its own version at build time, the Docusaurus plugin passes its version on the script tag, and
 * the server reports its version in `GET /api/config`; an incompatible pair is said in the panel,
 * because its symptoms (refused requests, missing fields) would otherwise look like bugs.
 */

/**
 * Major and minor of a version ("0.3.1" → [0, 3]), or null for anything that is not one.
 *
 * @param {unknown} version
 * @returns {[number, number] | null}
 */
function majorMinor(version) {
  const match = typeof version === 'string' ? /^v?(\d+)\.(\d+)\.\d+/.exec(version.trim()) : null;
  return match ? [Number(match[1]), Number(match[2])] : null;
}

/**
 * Same major version; and for 0.x, where every minor release may change the API, the same minor.
 * Unknown versions (an older server that does not tell) count as compatible: nothing to say.
 *
 * @param {unknown} a
 * @param {unknown} b
 */
export function compatible(a, b) {
  const x = majorMinor(a);
  const y = majorMinor(b);
  if (!x || !y) return true;
  return x[0] === y[0] && (x[0] !== 0 || x[1] === y[1]);
}

/** @param {[number, number]} x  @param {[number, number]} y  x older than y */
function older(x, y) {
  return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
}

/**
 * What to tell the reader (and the site's owner) when the server's version does not go with the
 * plugin's or the widget's; "" when it does.
 *
 * @param {{ server: unknown, widget?: unknown, plugin?: unknown }} versions
 */
export function versionMismatch({ server, widget, plugin }) {
  const theirs = majorMinor(server);
  if (!theirs) return '';
  /** @type {[string, string][]} */
  const clashes = [];
  if (!compatible(server, plugin)) clashes.push(['docusaurus-plugin-bookwise', String(plugin)]);
  if (!compatible(server, widget)) clashes.push(['widget', String(widget)]);
  if (!clashes.length) return '';
  const [name, version] = clashes[0];
  const mine = /** @type {[number, number]} */ (majorMinor(version));
  const upgrade = older(theirs, mine)
    ? `Upgrade the Bookwise server to ${mine[0]}.${mine[1]}.x.`
    : `Upgrade ${name} to ${theirs[0]}.${theirs[1]}.x.`;
  return (
    `Version mismatch: the Bookwise server is ${server}, this site's ${name} is ${version}. ` +
    `Answers may fail until they match. ${upgrade}`
  );
}
