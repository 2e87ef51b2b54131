import { InvalidPayloadError } from '../errors/jobs.errors.js';
import { serialisePayload } from './json-payload.js';

describe('serialisePayload', () => {
  it('passes plain data through exactly as JSON.stringify would', () => {
    const payload = {
      a: [1, 'two', null, true],
      nested: { when: new Date(0) },
      skipped: undefined,
    };
    expect(serialisePayload(payload)).toBe(JSON.stringify(payload));
  });

  it.each([
    [{ f: () => 0 }, '$.f is a function'],
    [{ list: [1, Symbol('s')] }, '$.list[1] is a symbol'],
    [[undefined], '$[0] is undefined'],
    [{ n: Infinity }, '$.n is Infinity'],
    [{ big: 1n }, '$.big is a BigInt'],
    [{ set: new Set([1]) }, '$.set is a Set instance'],
  ])('refuses %p, naming the path', (payload, message) => {
    expect(() => serialisePayload(payload)).toThrow(InvalidPayloadError);
    expect(() => serialisePayload(payload)).toThrow(message);
  });

  it('refuses a cycle but accepts the same object twice side by side', () => {
    const shared = { x: 1 };
    expect(serialisePayload({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    const loop: unknown[] = [];
    loop.push({ back: loop });
    expect(() => serialisePayload(loop)).toThrow('$[0].back refers back to itself');
  });
});
