import {
  InvalidJobOptionsError,
  InvalidPayloadError,
  UnknownTaskError,
} from '../errors/jobs.errors.js';
import { serialisePayload, validateJob } from './validate-job.js';
import type { JobDefaults } from './validate-job.js';

const defaults: JobDefaults = {
  taskMaxRetries: (task) => (task === 'picky' ? 1 : undefined),
  isKnownTask: (task) => task === 'known' || task === 'picky',
  knownTasks: () => ['known', 'picky'],
  allowUnknownTasks: false,
  maxRetries: 5,
};

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

describe('validateJob', () => {
  it('takes maxRetries from the job, else the task, else the module', () => {
    expect(validateJob({ task: 'known', maxRetries: 0 }, defaults).maxRetries).toBe(0);
    expect(validateJob({ task: 'picky' }, defaults).maxRetries).toBe(1);
    expect(validateJob({ task: 'known' }, defaults).maxRetries).toBe(5);
  });

  it('gives every job a fresh id and an empty object payload by default', () => {
    const a = validateJob({ task: 'known' }, defaults);
    const b = validateJob({ task: 'known' }, defaults);
    expect(a.id).not.toBe(b.id);
    expect(a.payload).toBe('{}');
  });

  it('refuses unknown tasks unless unknown tasks are allowed', () => {
    expect(() => validateJob({ task: 'other' }, defaults)).toThrow(UnknownTaskError);
    expect(validateJob({ task: 'other' }, { ...defaults, allowUnknownTasks: true }).task).toBe(
      'other',
    );
  });

  it('refuses a non-boolean flag', () => {
    expect(() => validateJob({ task: 'known', promise: 'yes' as never }, defaults)).toThrow(
      InvalidJobOptionsError,
    );
  });
});
