import { assertOptionsObject } from '../common/assert-options-object.js';
import { validateSchedule } from '../cron-schedule/validate-schedule.js';
import { attemptOverrun, OVERRUN_HAZARD } from './attempt-overrun.js';
import * as defaults from './defaults.js';
import type { JobsModuleOptions } from './jobs-module-options.interface.js';
import { moduleOptionError, OPTION_TABLE } from './option-table.js';
import type { EachOptionResolved } from './option-table.js';
import type { ResolvedJobsOptions } from './resolved-options.js';

const KNOWN_OPTIONS: ReadonlySet<string> = new Set(Object.keys(OPTION_TABLE));

/**
 * Validates the module options once, at boot, and applies the defaults: each option by its entry
 * in `OPTION_TABLE`, then the rules between options. Every message names the option and the value
 * it was given.
 */
export function resolveJobsOptions(options: JobsModuleOptions): ResolvedJobsOptions {
  assertOptionsObject(options, KNOWN_OPTIONS, moduleOptionError);
  const each = Object.fromEntries(
    Object.entries(OPTION_TABLE).map(([name, entry]) => [name, entry.resolve(options[name], name)]),
  ) as EachOptionResolved;
  const missedSlotGrace = resolveMissedSlotGrace(each.missedSlotGrace, each.pollingCheck);
  const resolved: ResolvedJobsOptions = {
    ...each,
    ...resolveConnection(each),
    concurrency: each.concurrency ?? Math.max(defaults.DEFAULT_CONCURRENCY, each.workers),
    missedSlotGrace,
    historyPartitionInterval:
      each.historyPartitionInterval ?? defaultPartitionInterval(each.historyExpiration),
    // Each schedule throws its own typed error (`InvalidCronExpressionError`, ...), naming it.
    schedules: each.schedules.map((schedule) =>
      validateSchedule(schedule, 'static', missedSlotGrace),
    ),
  };
  checkLiveness(resolved);
  checkAttemptOverrun(resolved);
  return resolved;
}

function resolveConnection({
  connection,
  dataSource,
}: EachOptionResolved): Pick<ResolvedJobsOptions, 'connection' | 'dataSource'> {
  if (connection !== undefined && dataSource !== undefined) {
    throw moduleOptionError('dataSource', '(a DataSource)', 'cannot be combined with "connection"');
  }
  if (connection === undefined && dataSource === undefined) {
    throw moduleOptionError(
      'connection',
      undefined,
      'must be a connection string or pg pool options (or pass "dataSource")',
    );
  }
  return { connection, dataSource };
}

/**
 * A due cron job that no notification announces (planned jobs become due by the clock, not by an
 * insert) is claimed on the next poll: with a grace shorter than `pollingCheck`, an idle cluster
 * would skip slots. So the default grows with `pollingCheck`, and a given grace must exceed it.
 */
function resolveMissedSlotGrace(grace: number | undefined, pollingCheck: number): number {
  if (grace === undefined) return Math.max(defaults.DEFAULT_MISSED_SLOT_GRACE, 2 * pollingCheck);
  if (grace <= pollingCheck) {
    throw moduleOptionError(
      'missedSlotGrace',
      grace,
      `must be longer than pollingCheck (${pollingCheck}s): a cron job that falls due just after a poll waits for the next one, and would be skipped as missed`,
    );
  }
  return grace;
}

/**
 * A quarter of the expiration: a partition is dropped at most about two intervals after its last
 * job expired, and some seven partitions live. History kept forever gets partitions of a day.
 */
function defaultPartitionInterval(historyExpiration: number): number {
  if (historyExpiration === 0) return defaults.MAX_HISTORY_PARTITION_INTERVAL;
  return Math.min(
    defaults.MAX_HISTORY_PARTITION_INTERVAL,
    Math.max(defaults.MIN_HISTORY_PARTITION_INTERVAL, Math.round(historyExpiration / 4)),
  );
}

/** One late heartbeat (a GC pause, a slow query) must not get a live instance's jobs requeued. */
function checkLiveness({ heartbeatInterval, instanceTimeout }: ResolvedJobsOptions): void {
  if (instanceTimeout < 2 * heartbeatInterval) {
    throw moduleOptionError(
      'instanceTimeout',
      instanceTimeout,
      `must be at least twice heartbeatInterval (${heartbeatInterval}s), so that one late heartbeat does not get a live instance presumed dead`,
    );
  }
}

function checkAttemptOverrun(resolved: ResolvedJobsOptions): void {
  const overrun = attemptOverrun(
    resolved,
    resolved.taskTimeout,
    resolved.workerModule !== undefined,
  );
  if (overrun) {
    throw moduleOptionError(
      'staleJobTimeout',
      resolved.staleJobTimeout,
      `must exceed taskTimeout (${resolved.taskTimeout}s) + ${overrun.extras} = ${overrun.longest}s, ${OVERRUN_HAZARD}`,
    );
  }
}
