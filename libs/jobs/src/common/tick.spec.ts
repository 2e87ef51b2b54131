import { jest } from '@jest/globals';
import { Tick, TICK_JITTER, TICK_STOP_TIMEOUT_MS } from './tick.js';

const INTERVAL_MS = 1000;

/** A run the test settles by hand, counting how many are in progress at once. */
function controlledRuns() {
  const state = { started: 0, inProgress: 0, mostAtOnce: 0, at: [] as number[] };
  const pending: { resolve(): void; reject(err: Error): void }[] = [];
  const run = () =>
    new Promise<void>((resolve, reject) => {
      state.started++;
      state.at.push(Date.now());
      state.mostAtOnce = Math.max(state.mostAtOnce, ++state.inProgress);
      const settle = () => state.inProgress--;
      pending.push({
        resolve: () => (settle(), resolve()),
        reject: (err) => (settle(), reject(err)),
      });
    });
  return { state, run, settleNext: () => pending.shift()!.resolve() };
}

function recordingLogger() {
  const warnings: string[] = [];
  return { warnings, warn: (message: unknown) => void warnings.push(String(message)) };
}

/** Whether `promise` has settled once the timers and microtasks due by now have run. */
function watch(promise: Promise<unknown>) {
  const watched = { settled: false };
  void promise.finally(() => (watched.settled = true));
  return watched;
}

let tick: Tick | undefined;

beforeEach(() => jest.useFakeTimers());
afterEach(async () => {
  const stopping = tick?.stop();
  await jest.runOnlyPendingTimersAsync();
  await stopping;
  tick = undefined;
  jest.useRealTimers();
});

it('never starts a run before the previous one settled, however long it takes', async () => {
  const { state, run, settleNext } = controlledRuns();
  tick = new Tick('Slow', INTERVAL_MS, run, recordingLogger());
  tick.start();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  expect(state.started).toBe(1);

  await jest.advanceTimersByTimeAsync(20 * INTERVAL_MS);
  expect(state.started).toBe(1);

  settleNext();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  expect(state.started).toBe(2);
  expect(state.mostAtOnce).toBe(1);
});

it('waits the interval shortened by at most TICK_JITTER, by a different amount each time', async () => {
  let at: number[] = [];
  tick = new Tick('Jittered', INTERVAL_MS, () => void at.push(Date.now()), recordingLogger());
  const startedAt = Date.now();
  tick.start();
  for (let run = 0; run < 200; run++) await jest.advanceTimersToNextTimerAsync();
  at = [startedAt, ...at];

  const waits = at.slice(1).map((time, index) => time - at[index]);
  expect(waits).toHaveLength(200);
  for (const wait of waits) {
    expect(wait).toBeGreaterThanOrEqual(Math.floor(INTERVAL_MS * (1 - TICK_JITTER)));
    expect(wait).toBeLessThanOrEqual(INTERVAL_MS);
  }
  // Two instances started together: their ticks have drifted apart after a few rounds.
  expect(new Set(waits).size).toBeGreaterThan(20);
});

it('logs a failing run and keeps ticking', async () => {
  const logger = recordingLogger();
  let runs = 0;
  tick = new Tick(
    'Flaky',
    INTERVAL_MS,
    () => {
      runs++;
      if (runs === 1) throw new Error('thrown');
      if (runs === 2) return Promise.reject(new Error('rejected'));
      if (runs === 3) return Promise.reject('a string');
    },
    logger,
  );
  tick.start();
  for (let run = 0; run < 4; run++) await jest.advanceTimersToNextTimerAsync();

  expect(runs).toBe(4);
  expect(logger.warnings).toEqual([
    'Flaky failed: thrown',
    'Flaky failed: rejected',
    'Flaky failed: a string',
  ]);
});

it('stop() waits for the run in progress and schedules nothing after it', async () => {
  const { state, run, settleNext } = controlledRuns();
  tick = new Tick('Draining', INTERVAL_MS, run, recordingLogger());
  tick.start();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  const stopped = watch(tick.stop());

  await jest.advanceTimersByTimeAsync(TICK_STOP_TIMEOUT_MS / 2);
  expect(stopped.settled).toBe(false);
  settleNext();
  await jest.advanceTimersByTimeAsync(0);
  expect(stopped.settled).toBe(true);

  await jest.advanceTimersByTimeAsync(10 * INTERVAL_MS);
  expect(state.started).toBe(1);
});

it('stop() gives up on a run that never ends after TICK_STOP_TIMEOUT_MS, and says so', async () => {
  const logger = recordingLogger();
  const { state, run, settleNext } = controlledRuns();
  tick = new Tick('Hung', INTERVAL_MS, run, logger);
  tick.start();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  const stopped = watch(tick.stop());

  await jest.advanceTimersByTimeAsync(TICK_STOP_TIMEOUT_MS - 1);
  expect(stopped.settled).toBe(false);
  expect(logger.warnings).toEqual([]);
  await jest.advanceTimersByTimeAsync(1);
  expect(stopped.settled).toBe(true);
  expect(logger.warnings).toEqual([
    `Hung: stopped waiting for the run in progress after ${TICK_STOP_TIMEOUT_MS / 1000}s; shutdown goes on without it.`,
  ]);

  // The run given up on finishes late: the stopped tick stays stopped.
  settleNext();
  await jest.advanceTimersByTimeAsync(10 * INTERVAL_MS);
  expect(state.started).toBe(1);
});

it('stop() is idempotent, and safe on a tick that never started', async () => {
  const logger = recordingLogger();
  const { run } = controlledRuns();
  tick = new Tick('Twice', INTERVAL_MS, run, logger);
  await tick.stop();

  tick.start();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  const first = tick.stop();
  const second = tick.stop();
  expect(second).toBe(first);
  await jest.advanceTimersByTimeAsync(TICK_STOP_TIMEOUT_MS);
  await Promise.all([first, second, tick.stop()]);
  expect(logger.warnings).toHaveLength(1);
});

it('a restart does not run beside a run an earlier stop() gave up on', async () => {
  const { state, run, settleNext } = controlledRuns();
  tick = new Tick('Restarted', INTERVAL_MS, run, recordingLogger());
  tick.start();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  const stopping = tick.stop();
  await jest.advanceTimersByTimeAsync(TICK_STOP_TIMEOUT_MS);
  await stopping;

  tick.start();
  await jest.advanceTimersByTimeAsync(10 * INTERVAL_MS);
  expect(state.started).toBe(1);
  settleNext();
  await jest.advanceTimersByTimeAsync(INTERVAL_MS);
  expect(state.started).toBe(2);
  expect(state.mostAtOnce).toBe(1);
});

describe('startNow()', () => {
  it('runs at once, resolves when that run settled, then ticks on the interval', async () => {
    const { state, run, settleNext } = controlledRuns();
    tick = new Tick('Eager', INTERVAL_MS, run, recordingLogger());
    const started = watch(tick.startNow());
    await jest.advanceTimersByTimeAsync(0);
    expect(state.started).toBe(1);
    expect(started.settled).toBe(false);

    settleNext();
    await jest.advanceTimersByTimeAsync(0);
    expect(started.settled).toBe(true);
    await jest.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(state.started).toBe(2);
  });

  it('runs the given first round instead, logging its failure like any run', async () => {
    const logger = recordingLogger();
    const { state, run } = controlledRuns();
    tick = new Tick('Booting', INTERVAL_MS, run, logger);
    await tick.startNow(() => Promise.reject(new Error('database not ready')));
    expect(logger.warnings).toEqual(['Booting failed: database not ready']);
    expect(state.started).toBe(0);

    await jest.advanceTimersByTimeAsync(INTERVAL_MS);
    expect(state.started).toBe(1);
  });

  it('lets a stop() during the first run wait for it, and schedules nothing after', async () => {
    const { state, run, settleNext } = controlledRuns();
    tick = new Tick('Interrupted', INTERVAL_MS, run, recordingLogger());
    const started = tick.startNow();
    const stopped = watch(tick.stop());
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped.settled).toBe(false);

    settleNext();
    await started;
    await jest.advanceTimersByTimeAsync(0);
    expect(stopped.settled).toBe(true);
    await jest.advanceTimersByTimeAsync(10 * INTERVAL_MS);
    expect(state.started).toBe(1);
  });
});
