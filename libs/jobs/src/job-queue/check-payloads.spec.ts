import { InvalidPayloadError } from '../errors/jobs.errors.js';
import type { StandardSchemaV1 } from '../task-schemas/standard-schema.js';
import { checkPayloads } from './check-payloads.js';
import type { ValidatedJob } from './validate-job.js';

/** A schema accepting `{ ok: true }`, answering at once or, `async`, a turn later. */
const okSchema = (async: boolean): StandardSchemaV1 => ({
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) => {
      const result =
        (value as { ok?: unknown }).ok === true
          ? { value }
          : { issues: [{ message: 'not ok', path: ['ok'] }] };
      return async ? new Promise((resolve) => setImmediate(() => resolve(result))) : result;
    },
  },
});

const job = (payloadSchema?: StandardSchemaV1) =>
  ({ task: 't', payloadSchema }) as unknown as ValidatedJob;

describe('checkPayloads', () => {
  it('answers undefined, with nothing to await, when no job has a schema or all pass at once', () => {
    expect(checkPayloads([{ payload: 1 }], [job()], false)).toBeUndefined();
    expect(
      checkPayloads([{ payload: { ok: true } }], [job(okSchema(false))], false),
    ).toBeUndefined();
  });

  it('checks a missing payload as {}, what is stored', () => {
    expect(() => checkPayloads([{}], [job(okSchema(false))], false)).toThrow(InvalidPayloadError);
  });

  it('refuses at once for a synchronous schema, naming the index only in a batch', () => {
    const refuse = (batch: boolean) => {
      try {
        checkPayloads([{ payload: { ok: false } }], [job(okSchema(false))], batch);
      } catch (err) {
        return err as InvalidPayloadError;
      }
      throw new Error('not refused');
    };
    expect(refuse(false).index).toBeUndefined();
    expect(refuse(true)).toMatchObject({ index: 0, path: '$.ok' });
  });

  it('awaits asynchronous schemas and reports the first refused job of the batch', async () => {
    const schema = okSchema(true);
    const checking = checkPayloads(
      [{ payload: { ok: true } }, { payload: {} }, { payload: { ok: 1 } }, {}],
      [job(schema), job(okSchema(false)), job(schema), job()],
      true,
    );
    expect(checking).toBeInstanceOf(Promise);
    await expect(checking).rejects.toMatchObject({ index: 1 });
    await expect(
      checkPayloads([{ payload: { ok: true } }], [job(schema)], true),
    ).resolves.toBeUndefined();
  });
});
