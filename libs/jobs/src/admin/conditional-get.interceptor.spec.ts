import { entityTagOf, matchesIfNoneMatch } from './conditional-get.interceptor.js';

describe('entityTagOf', () => {
  it('is a quoted base64url SHA-1 of the text, the same for the same text and another for another', () => {
    const tag = entityTagOf('{"jobs":[]}');
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(entityTagOf('{"jobs":[]}')).toBe(tag);
    expect(entityTagOf('{"jobs":[1]}')).not.toBe(tag);
  });
});

describe('matchesIfNoneMatch', () => {
  const tag = '"abc"';
  it.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['"x",W/"abc"', true],
    ['*', true],
    ['"abcd"', false],
    ['abc', false],
    ['"x"', false],
    ['', false],
  ])('If-None-Match %j names "abc": %s', (header, expected) => {
    expect(matchesIfNoneMatch(header, tag)).toBe(expected);
  });

  it('is false without the header', () => {
    expect(matchesIfNoneMatch(undefined, tag)).toBe(false);
  });
});
