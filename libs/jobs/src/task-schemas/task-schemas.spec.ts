import { JobSnooze, TaskSchemaError, UnrecoverableJobError } from '../errors/jobs.errors.js';
import type { StandardSchemaV1 } from './standard-schema.js';
import { isStandardSchema, runWithSchemas } from './task-schemas.js';

/** A schema of numbers given as text: its output is the number. */
const numberText: StandardSchemaV1<string, number> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) =>
      typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))
        ? { value: Number(value) }
        : { issues: [{ message: 'is not a number', path: ['n'] }] },
  },
};
const positive: StandardSchemaV1<number> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: async (value) =>
      typeof value === 'number' && value > 0 ? { value } : { issues: [{ message: 'not > 0' }] },
  },
};

describe('runWithSchemas', () => {
  it('runs the handler on the payload schema output and returns the result schema output', async () => {
    const seen: unknown[] = [];
    const result = await runWithSchemas(
      't',
      { payloadSchema: numberText, resultSchema: positive },
      '21',
      (payload) => (seen.push(payload), (payload as number) * 2),
    );
    expect(seen).toEqual([21]);
    expect(result).toBe(42);
  });

  it("refuses a payload before the handler runs, with the schema's issues, as unrecoverable", async () => {
    let ran = false;
    const running = runWithSchemas('t', { payloadSchema: numberText }, 'x', () => (ran = true));
    await expect(running).rejects.toBeInstanceOf(TaskSchemaError);
    await expect(running).rejects.toBeInstanceOf(UnrecoverableJobError);
    await expect(running).rejects.toMatchObject({
      subject: 'payload',
      issues: [{ message: 'is not a number', path: ['n'] }],
      message: expect.stringContaining('$.n: is not a number'),
    });
    expect(ran).toBe(false);
  });

  it('refuses a result the result schema refuses, and leaves a snooze unchecked', async () => {
    await expect(
      runWithSchemas('t', { resultSchema: positive }, {}, () => -1),
    ).rejects.toMatchObject({
      subject: 'result',
      message: expect.stringContaining('$: not > 0'),
    });
    const snooze = new JobSnooze(5);
    await expect(runWithSchemas('t', { resultSchema: positive }, {}, () => snooze)).resolves.toBe(
      snooze,
    );
  });
});

describe('isStandardSchema', () => {
  it('takes an object or function with a version-1 validate, and nothing else', () => {
    expect(isStandardSchema(numberText)).toBe(true);
    const callable = Object.assign(() => undefined, { '~standard': numberText['~standard'] });
    expect(isStandardSchema(callable)).toBe(true);
    for (const other of [
      null,
      undefined,
      'z',
      {},
      { '~standard': { version: 2, validate() {} } },
    ]) {
      expect(isStandardSchema(other)).toBe(false);
    }
  });
});
