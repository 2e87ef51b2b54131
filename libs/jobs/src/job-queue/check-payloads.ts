import { InvalidPayloadError } from '../errors/jobs.errors.js';
import type { StandardSchemaV1 } from '../task-schemas/standard-schema.js';
import type { ValidatedJob } from './validate-job.js';

type Checked = StandardSchemaV1.Result<unknown> | undefined;

/**
 * Checks each payload whose task has a `payloadSchema` against it, before the insert: the payload
 * as given (`{}` when none was), which is also what is stored, not the schema's output (the
 * handler's instance parses it again, with the definition it runs). Returns `undefined` when no
 * job of the call has a schema, or every schema answered synchronously and accepted: only calls
 * with an asynchronous schema await. Of several refused jobs, the first is reported, with its
 * `index` in an `addJobs` batch.
 */
export function checkPayloads(
  options: readonly { readonly payload?: unknown }[],
  jobs: readonly ValidatedJob[],
  batch: boolean,
): Promise<void> | undefined {
  let results: (Checked | Promise<Checked>)[] | undefined;
  let async = false;
  for (let index = 0; index < jobs.length; index++) {
    const { payloadSchema } = jobs[index];
    if (!payloadSchema) continue;
    results ??= new Array<Checked>(jobs.length);
    const given = options[index].payload;
    const payload = given === undefined ? {} : given;
    const result = payloadSchema['~standard'].validate(payload);
    results[index] = result;
    if (typeof (result as Partial<PromiseLike<unknown>>).then === 'function') async = true;
  }
  if (!results) return undefined;
  const refuseFirst = (checked: readonly Checked[]) => {
    const index = checked.findIndex((result) => result?.issues);
    if (index < 0) return;
    throw new InvalidPayloadError({
      task: jobs[index].task,
      issues: checked[index]!.issues!,
      ...(batch && { index }),
    });
  };
  if (!async) {
    refuseFirst(results as Checked[]);
    return undefined;
  }
  return Promise.all(results).then(refuseFirst);
}
