/**
 * Bytes one preview takes at most in a list response, as JSON (its quotes and escapes included).
 * A list gives at most 200 jobs, each with at most four previews (its payload's, its last error's,
 * its result's and its progress'), so previews add at most 240 kB to a page however large the
 * values are. Characters
 * alone do not bound it: a character may take 4 bytes in UTF-8, a control character 6 as JSON.
 */
export const PREVIEW_JSON_BYTES = 300;
const ELLIPSIS = '…';
const ELLIPSIS_BYTES = Buffer.byteLength(ELLIPSIS);

/**
 * A preview (cut to `PREVIEW_CHARS` characters by the SQL) cut further, at a character, so that
 * it takes at most `PREVIEW_JSON_BYTES` as JSON; it then ends with `…`.
 */
export function boundPreview(text: string | null): string | null {
  if (text === null || Buffer.byteLength(JSON.stringify(text)) <= PREVIEW_JSON_BYTES) return text;
  let bytes = 2 + ELLIPSIS_BYTES;
  let cut = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(JSON.stringify(char)) - 2;
    if (bytes > PREVIEW_JSON_BYTES) break;
    cut += char.length;
  }
  return text.slice(0, cut) + ELLIPSIS;
}
