/** Every `JobState`, in the order a job goes through them (the ended ones last). */
export const JOB_STATES = [
  'blocked',
  'pending',
  'active',
  'suspended',
  'completed',
  'failed',
  'interrupted',
  'cancelled',
  'skipped',
  'snoozed',
] as const;

/**
 * Where a job is: `blocked` in the queue while a job of its flow it depends on has not ended
 * (`addFlow`), `pending` in the queue (also between retries), `active` on an instance, `suspended`
 * in the queue while its task waits durably (`ctx.sleep`, `ctx.waitForEvent`, `ctx.waitForJobs`),
 * or ended. `skipped` is a cron job that never ran: it had not started within its schedule's
 * `missedSlotGrace` after its slot, or its schedule (`overlap: 'skip'`) had a run active; its
 * `lastErrorMessage` says which. `snoozed` is what history says of an attempt whose task asked
 * to run later (`ctx.snooze`); the job itself is then `pending` again.
 *
 * @publicApi
 */
export type JobState = (typeof JOB_STATES)[number];

/** The states of a job waiting in the queue (a row of `jobs`: see `queuedJobState`). */
export const QUEUED_JOB_STATES: readonly JobState[] = ['blocked', 'pending', 'suspended'];

/** Whether `state` is a queued job's: its queue is the one its task has here (`pendingQueueOf`). */
export const isQueuedState = (state: JobState): boolean => QUEUED_JOB_STATES.includes(state);

/**
 * SQL: the state of `alias`, a row of `jobs`: `blocked` while its flow dependencies have not all
 * ended ("blockedBy" > 0), `suspended` while its task waits durably ("waitingFor": also for jobs,
 * counted in "blockedBy"), else `pending`.
 */
export const queuedJobState = (alias: string): string =>
  `CASE WHEN ${alias}."waitingFor" IS NOT NULL THEN 'suspended'
        WHEN ${alias}."blockedBy" > 0 THEN 'blocked' ELSE 'pending' END`;

/**
 * SQL: when `alias`, a row of `jobs`, is due: NULL while no time makes it due: blocked (its
 * "waitUntil" is 'infinity' until its last dependency ends), or suspended on an event without a
 * timeout.
 */
export const queuedWaitUntil = (alias: string): string =>
  `CASE WHEN ${alias}."blockedBy" > 0 OR ${alias}."waitUntil" = 'infinity' THEN NULL
        ELSE ${alias}."waitUntil" END`;
