import { storableText, truncateUtf8, unstorableReason } from './storable-text.js';

const EMOJI = '\u{1F600}';
const HALF_EMOJI = EMOJI.slice(0, 1);

describe('unstorableReason', () => {
  it('finds a NUL character and a lone surrogate of either half, anywhere', () => {
    expect(unstorableReason('a\u0000b')).toMatch(/^contains a NUL character/);
    expect(unstorableReason(`cut ${HALF_EMOJI}`)).toMatch(/^contains a lone surrogate/);
    expect(unstorableReason(`${EMOJI.slice(1)} tail`)).toMatch(/^contains a lone surrogate/);
  });

  it('passes what PostgreSQL stores: whole emoji, other control characters, the empty string', () => {
    for (const text of ['', 'plain', `${EMOJI}${EMOJI}`, 'tab\tnew\nline\u0001', '\uFFFD']) {
      expect(unstorableReason(text)).toBeUndefined();
    }
  });
});

describe('storableText', () => {
  it('replaces each NUL and lone surrogate with U+FFFD and keeps whole characters', () => {
    expect(storableText(`a\u0000b${HALF_EMOJI}c${EMOJI}`)).toBe(`a\uFFFDb\uFFFDc${EMOJI}`);
  });

  it('returns a clean text as it is', () => {
    const text = `clean ${EMOJI}`;
    expect(storableText(text)).toBe(text);
  });
});

describe('truncateUtf8', () => {
  it('keeps a text within the bound whole', () => {
    expect(truncateUtf8('abc', 3)).toBe('abc');
  });

  it('cuts at the bound in bytes, never inside a character', () => {
    // Four bytes each: a bound of 10 holds two, not two and a half.
    expect(truncateUtf8(EMOJI.repeat(3), 10)).toBe(EMOJI.repeat(2));
    expect(truncateUtf8(`é${EMOJI}`, 5)).toBe('é');
    expect(truncateUtf8('ab€', 4)).toBe('ab');
  });

  it('bounds 2,000 emoji to 4,000 bytes', () => {
    const cut = truncateUtf8(EMOJI.repeat(2_000), 4_000);
    expect(Buffer.byteLength(cut)).toBe(4_000);
    expect(unstorableReason(cut)).toBeUndefined();
  });
});
