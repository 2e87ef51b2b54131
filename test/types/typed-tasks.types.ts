/*
 * Type tests of typed tasks (issue 27): compiled by `npm run typecheck` (tsconfig.json includes
 * test/), never run. Each `@ts-expect-error` line must be refused by the compiler: were it
 * accepted, tsc reports the directive as unused and the typecheck fails.
 */
import { Injectable } from '@nestjs/common';
import { defineTask, JobTask } from 'nestjs-pg-jobs';
import type {
  JobContext,
  JobQueueService,
  JobTaskHandler,
  TaskPayload,
  TaskResult,
} from 'nestjs-pg-jobs';
import * as v from 'valibot';
import { z } from 'zod';

export const SendEmail = defineTask({
  name: 'types.sendEmail',
  payloadSchema: z.object({ to: z.email(), locale: z.string().default('en') }),
  resultSchema: z.object({ messageId: z.string() }),
});

export const Resize = defineTask({
  name: 'types.resize',
  payloadSchema: v.object({ width: v.pipe(v.string(), v.transform(Number)) }),
});

export const Untyped = defineTask({ name: 'types.untyped' });

/** What two types being the same looks like to the compiler. */
type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(check: Equal<A, B>) => check;

same<TaskPayload<typeof SendEmail>, { to: string; locale: string }>(true);
same<TaskResult<typeof SendEmail>, { messageId: string }>(true);
same<TaskPayload<typeof Resize>, { width: number }>(true);
same<TaskPayload<typeof Untyped>, unknown>(true);

@JobTask(SendEmail)
@Injectable()
export class SendEmailHandler implements JobTaskHandler<typeof SendEmail> {
  async run(payload: TaskPayload<typeof SendEmail>, _ctx: JobContext) {
    const locale: string = payload.locale;
    return { messageId: `${payload.to}/${locale}` };
  }
}

@JobTask(SendEmail)
@Injectable()
export class WrongResultHandler implements JobTaskHandler<typeof SendEmail> {
  // @ts-expect-error -- a wrong field in the result: messageId is a string
  async run(_payload: TaskPayload<typeof SendEmail>) {
    return { messageId: 42 };
  }
}

@JobTask(SendEmail)
@Injectable()
export class WrongPayloadHandler implements JobTaskHandler<typeof SendEmail> {
  // @ts-expect-error -- a payload type that is not the schema's output
  run(payload: { id: number }) {
    return { messageId: String(payload.id) };
  }
}

/** The old forms keep working: a payload type and a result type. */
@JobTask('types.plain')
@Injectable()
export class PlainHandler implements JobTaskHandler<{ n: number }, number> {
  run(payload: { n: number }) {
    return payload.n;
  }
}

export async function producer(queue: JobQueueService): Promise<void> {
  const { promise } = await queue.addJob({
    task: SendEmail,
    payload: { to: 'a@example.com' },
    promise: true,
  });
  const result: { messageId: string } = await promise;
  void result;

  // @ts-expect-error -- a wrong payload: `to` is missing
  await queue.addJob({ task: SendEmail, payload: { locale: 'de' } });
  // @ts-expect-error -- a wrong payload: `to` is a string
  await queue.addJob({ task: SendEmail, payload: { to: 42 } });
  // @ts-expect-error -- the payload is required when the schema's input needs fields
  await queue.addJob({ task: SendEmail });

  const typed = await queue.addJob({
    task: SendEmail,
    payload: { to: 'b@example.com' },
    promise: true,
  });
  // @ts-expect-error -- a wrong promise type: it resolves with { messageId: string }
  const wrong: Promise<number> = typed.promise;
  void wrong;

  // The schema's input, not its output: `width` is given as a string.
  await queue.addJob({ task: Resize, payload: { width: '640' } });
  // @ts-expect-error -- the input of Resize's schema is a string
  await queue.addJob({ task: Resize, payload: { width: 640 } });

  // A task without a payloadSchema takes anything, as a task name does.
  await queue.addJob({ task: Untyped, payload: { anything: true } });
  await queue.addJob({ task: Untyped });
  await queue.addJob<string>({ task: 'types.plain', payload: { n: 1 } });

  await queue.addJobs([
    { task: SendEmail, payload: { to: 'c@example.com' } },
    { task: 'types.plain', payload: { n: 2 } },
  ]);
  // @ts-expect-error -- a wrong payload in a batch
  await queue.addJobs([{ task: SendEmail, payload: { to: 3 } }]);

  const waited: { messageId: string } = await queue.waitForJob<typeof SendEmail>('id');
  void waited;
  // @ts-expect-error -- waitForJob<typeof SendEmail> resolves with { messageId: string }
  const wrongWait: number = await queue.waitForJob<typeof SendEmail>('id');
  void wrongWait;
  const plainWait: number = await queue.waitForJob<number>('id');
  void plainWait;

  const job = await queue.getJob<typeof SendEmail>('id');
  const messageId: string | undefined = job?.result?.messageId;
  void messageId;
}
