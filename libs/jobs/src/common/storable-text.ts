/**
 * What PostgreSQL refuses in text: a `text` column refuses NUL (U+0000), a `jsonb` one refuses its
 * `\u0000` escape and a lone surrogate (what `slice()` leaves of an emoji cut in half), which
 * `JSON.stringify` writes as an escape too. A lone surrogate in a `text` parameter is not refused
 * but silently turned into U+FFFD on its way: two different keys could then become one.
 */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** Why PostgreSQL would refuse `text` (a phrase: "contains a NUL character"), or `undefined`. */
export function unstorableReason(text: string): string | undefined {
  const found = UNSTORABLE.exec(text);
  if (!found) return undefined;
  return found[0] === '\u0000'
    ? 'contains a NUL character (U+0000), which PostgreSQL cannot store'
    : 'contains a lone surrogate (half a character, as slice() leaves of an emoji), which PostgreSQL cannot store unchanged';
}

/** `text` with what PostgreSQL refuses replaced by U+FFFD: for messages, which must be kept, not refused. */
export function storableText(text: string): string {
  return UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, '\uFFFD') : text;
}

/**
 * The longest prefix of `text` whose UTF-8 is at most `maxBytes`, cut between characters (never
 * inside a surrogate pair).
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  // UTF-8 takes at most three bytes per UTF-16 unit: most texts need no counting at all.
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const code = text.codePointAt(end)!;
    const units = code > 0xffff ? 2 : 1;
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes + size > maxBytes) break;
    bytes += size;
    end += units;
  }
  return text.slice(0, end);
}
