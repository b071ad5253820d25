// The widget against the answer events' JSON Schema, which scripts/gen_reference.py writes from the
// server's typed events (backend/bookwise/generation/events.py): the widget handles every event the
// server sends, and every field it declares reading (its JSDoc types of the events, which tsc holds
// its code to) is one the server sends, with a type that fits, required where the widget relies on it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import test from 'node:test';

const SRC = new URL('../src/', import.meta.url);
const SCHEMA_FILE = new URL('fixtures/answer-events.schema.json', import.meta.url);
const SCHEMA = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));

/** @typedef {{ [key: string]: any }} Json */

/** @type {Map<string, Json>} Each event's name to the schema of its data. */
const EVENTS = new Map(
  SCHEMA.oneOf.map((/** @type {Json} */ option) => [
    option.properties.event.const,
    resolve(option.properties.data).schema,
  ]),
);

/**
 * A schema with its `$ref` followed and its null option taken out.
 *
 * @param {Json} schema
 * @returns {{ schema: Json, nullable: boolean }}
 */
function resolve(schema) {
  if (schema.$ref) return resolve(SCHEMA.$defs[schema.$ref.split('/').pop()]);
  if (schema.anyOf) {
    const options = schema.anyOf.filter((/** @type {Json} */ option) => option.type !== 'null');
    assert.equal(options.length, 1, `one type besides null: ${JSON.stringify(schema)}`);
    return { schema: resolve(options[0]).schema, nullable: options.length < schema.anyOf.length };
  }
  return { schema, nullable: false };
}

// --- the widget's JSDoc types -----------------------------------------------------------------

/**
 * `text` cut at each top-level `separator` (outside brackets, braces, parentheses and quotes).
 *
 * @param {string} text
 * @param {string} separator
 */
function splitTop(text, separator) {
  const parts = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote) {
      if (char === quote) quote = '';
    } else if (char === "'" || char === '"') quote = char;
    else if ('{[(<'.includes(char)) depth++;
    else if ('}])>'.includes(char) && !(char === '>' && text[i - 1] === '=')) depth--;
    else if (depth === 0 && char === separator) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts.filter(Boolean);
}

/**
 * The type in braces that starts at `text[open]`, and where it ends.
 *
 * @param {string} text
 * @param {number} open
 */
function braced(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return { type: text.slice(open + 1, i).trim(), end: i + 1 };
  }
  throw new Error(`unclosed type at ${text.slice(open, open + 40)}`);
}

/**
 * Every `@typedef` of the widget's sources: its name to its type, an object typedef's
 * `@property` lines as an object literal type.
 *
 * @returns {Map<string, string>}
 */
function typedefs() {
  /** @type {Map<string, string>} */
  const found = new Map();
  for (const file of readdirSync(SRC).filter((name) => name.endsWith('.js'))) {
    const source = readFileSync(new URL(file, SRC), 'utf8');
    for (const [comment] of source.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
      const text = comment.replace(/^\s*\*(?!\/) ?/gm, ' ');
      for (const tag of text.matchAll(/@typedef\s*(?=\{)/g)) {
        const index = /** @type {number} */ (tag.index) + tag[0].length;
        const { type, end } = braced(text, index);
        const name = /^\s*(\w+)/.exec(text.slice(end))?.[1];
        if (!name) continue;
        if (type.startsWith('import(')) continue; // an alias of a typedef found in its own file
        if (type !== 'object') {
          found.set(name, type);
          continue;
        }
        const next = text.slice(end).search(/@typedef/);
        const body = next < 0 ? text.slice(end) : text.slice(end, end + next);
        const properties = [];
        for (const property of body.matchAll(/@property\s*(?=\{)/g)) {
          const at = /** @type {number} */ (property.index) + property[0].length;
          const field = braced(body, at);
          const key = /^\s*(\[?)(\w+)/.exec(body.slice(field.end));
          if (key) properties.push(`${key[2]}${key[1] ? '?' : ''}: ${field.type}`);
        }
        found.set(name, `{ ${properties.join(', ')} }`);
      }
    }
  }
  return found;
}

const TYPES = typedefs();

/**
 * A type with its typedef names replaced by what they stand for.
 *
 * @param {string} type
 * @returns {string}
 */
function expand(type) {
  const name = /^(?:import\([^)]*\)\.)?(\w+)$/.exec(type.trim())?.[1];
  return name && TYPES.has(name) ? expand(/** @type {string} */ (TYPES.get(name))) : type.trim();
}

/**
 * The fields of an object literal type: name, type, whether the widget marks it optional.
 *
 * @param {string} type  `{ a: T, b?: U }`
 */
function fieldsOf(type) {
  const inner = type.trim().replace(/^\{/, '').replace(/\}$/, '');
  return splitTop(inner, ',').map((part) => {
    const colon = part.indexOf(':');
    const key = part.slice(0, colon).trim();
    return { name: key.replace(/\?$/, ''), optional: key.endsWith('?'), type: part.slice(colon + 1).trim() };
  });
}

/** @type {Record<string, string[]>} The JSON Schema types a widget type accepts. */
const JSON_TYPES = { string: ['string'], number: ['number', 'integer'], boolean: ['boolean'] };

/**
 * Where the widget's type of a value does not fit the schema of what the server sends.
 *
 * @param {string} widgetType
 * @param {Json} sent  The value's schema.
 * @param {string} path
 * @returns {string[]}
 */
function misfits(widgetType, sent, path) {
  const { schema, nullable } = resolve(sent);
  const options = splitTop(expand(widgetType), '|').map(expand);
  const values = options.filter((option) => option !== 'null' && option !== 'undefined');
  if (nullable && !options.includes('null')) return [`${path}: the server may send null`];
  if (values.length > 1 && values.every((option) => /^'.*'$/.test(option))) {
    const known = values.map((option) => option.slice(1, -1));
    const unknown = (schema.enum ?? []).filter((/** @type {string} */ value) => !known.includes(value));
    return unknown.length ? [`${path}: values the widget does not know: ${unknown.join(', ')}`] : [];
  }
  if (values.length !== 1) return [`${path}: cannot read the widget's type ${widgetType}`];
  const type = values[0];
  if (type in JSON_TYPES) {
    const fits = JSON_TYPES[type].includes(schema.type);
    return fits ? [] : [`${path}: the widget expects ${type}, the server sends ${schema.type}`];
  }
  const expected = type.endsWith('[]') ? 'array' : type.startsWith('{') ? 'object' : '';
  if (expected && schema.type !== expected) {
    return [`${path}: the widget expects ${expected}, the server sends ${schema.type}`];
  }
  if (expected === 'array') return misfits(type.slice(0, -2), schema.items, `${path}[]`);
  if (expected === 'object') {
    return fieldsOf(type).flatMap((field) => {
      const where = `${path}.${field.name}`;
      if (!(field.name in schema.properties)) return [`${where}: the server sends no such field`];
      if (!field.optional && !(schema.required ?? []).includes(field.name)) {
        return [`${where}: the widget relies on it, the server may leave it out`];
      }
      return misfits(field.type, schema.properties[field.name], where);
    });
  }
  return [`${path}: cannot read the widget's type ${widgetType}`];
}

/** The widget's `AnswerEvent`: each event name to the type of its data. */
function widgetEvents() {
  const union = TYPES.get('AnswerEvent');
  assert.ok(union, 'the widget types its events as AnswerEvent (src/api.js)');
  return new Map(
    splitTop(union, '|').map((tuple) => {
      const [name, data] = splitTop(tuple.replace(/^\[/, '').replace(/\]$/, ''), ',');
      return [name.slice(1, -1), data];
    }),
  );
}

// --- the tests --------------------------------------------------------------------------------

test('the schema is the one the server writes: five events, each with a required data object', () => {
  assert.deepEqual([...EVENTS.keys()], ['meta', 'sources', 'token', 'done', 'error']);
  for (const [name, data] of EVENTS) {
    assert.equal(data.type, 'object', name);
    assert.deepEqual([...data.required].sort(), Object.keys(data.properties).sort(), name);
  }
});

test("the widget's event handling knows every event the server sends, and no other", () => {
  const turn = readFileSync(new URL('turn.js', SRC), 'utf8');
  const handled = [...turn.matchAll(/\bname === '(\w+)'/g)].map((match) => match[1]);
  assert.deepEqual([...handled].sort(), [...EVENTS.keys()].sort());
  assert.deepEqual([...widgetEvents().keys()].sort(), [...EVENTS.keys()].sort());
});

test('every field the widget reads from an event is sent, with a type that fits', () => {
  const problems = [...widgetEvents()].flatMap(([name, data]) =>
    misfits(data, /** @type {Json} */ (EVENTS.get(name)), name),
  );
  assert.deepEqual(problems, []);
});

test('a field the server does not send, or sends as null, is caught (the check can fail)', () => {
  const done = /** @type {Json} */ (EVENTS.get('done'));
  assert.deepEqual(misfits('{ answer_kind: string, verdict: string }', done, 'done'), [
    'done.verdict: the server sends no such field',
  ]);
  assert.deepEqual(misfits('{ widen: { scope: string, label: string } }', done, 'done'), [
    'done.widen: the server may send null',
  ]);
  assert.deepEqual(misfits("{ answer_kind: 'generated' | 'extractive' }", done, 'done'), [
    'done.answer_kind: values the widget does not know: not_covered, not_in_selection',
  ]);
  const sources = /** @type {Json} */ (EVENTS.get('sources'));
  assert.deepEqual(misfits('{ sources: { n: string }[] }', sources, 'sources'), [
    'sources.sources[].n: the widget expects string, the server sends integer',
  ]);
});
