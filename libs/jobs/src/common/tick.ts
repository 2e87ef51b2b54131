import type { Logger } from '@nestjs/common';
import { toError } from './errors.js';

/**
 * The largest fraction by which a tick shortens its interval, drawn anew before every run, so that
 * instances booted together (a deploy, a restarted fleet) drift apart instead of hitting the
 * database in lockstep.
 *
 * Jitter only ever shortens: an interval stays the longest wait between two runs, which is what
 * other options are checked against (`instanceTimeout` at least two `heartbeatInterval`s,
 * `missedSlotGrace` longer than `pollingCheck`) and what the guide promises ("within
 * `instanceTimeout` plus one reaper interval").
 */
export const TICK_JITTER = 0.1;

/**
 * How long `stop()` waits for a run in progress. A round is a few statements; one still running
 * after this is stuck on the database, and shutdown goes on without it rather than hang with it.
 */
export const TICK_STOP_TIMEOUT_MS = 10_000;

/**
 * A named periodic task, the one shape of every background loop of the module (polling, reaping,
 * cron planning, pruning, heartbeats).
 *
 * - A run never overlaps the previous one: the next is scheduled only once it settles (unlike
 *   `setInterval`, which piles runs up behind a slow one), even across a stop and a restart.
 * - Each wait is the interval shortened by up to {@link TICK_JITTER}.
 * - A failing run is logged and the tick goes on.
 * - `stop()` schedules nothing more and waits for a run in progress, but at most
 *   {@link TICK_STOP_TIMEOUT_MS}: then it logs that it gave up and resolves. It is idempotent, and
 *   safe on a tick that never started; a run it gave up on may still finish, and schedules nothing.
 */
export class Tick {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private active = false;
  private stopping?: Promise<void>;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown> | unknown,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {}

  /** Runs first after one interval. */
  start(): void {
    if (this.activate() && !this.running) this.schedule();
  }

  /**
   * Runs `first` (by default the tick's own run) at once, then every interval; resolves once that
   * first run settled. A failing first run is logged like any other; a `stop()` meanwhile waits for it.
   */
  async startNow(first: () => Promise<unknown> | unknown = this.run): Promise<void> {
    if (!this.activate()) return;
    // A run given up on by an earlier stop() counts as the first: nothing runs beside it.
    await (this.running ?? this.launch(first));
  }

  stop(): Promise<void> {
    if (this.active) {
      this.active = false;
      clearTimeout(this.timer);
      this.stopping = this.awaitRunInProgress();
    }
    return this.stopping ?? Promise.resolve();
  }

  private activate(): boolean {
    if (this.active) return false;
    this.active = true;
    this.stopping = undefined;
    return true;
  }

  private schedule(): void {
    const delay = this.intervalMs * (1 - TICK_JITTER * Math.random());
    this.timer = setTimeout(() => void this.launch(this.run), delay);
  }

  private launch(work: () => Promise<unknown> | unknown): Promise<void> {
    this.running = this.runLogged(work).finally(() => {
      this.running = undefined;
      if (this.active) this.schedule();
    });
    return this.running;
  }

  private async runLogged(work: () => Promise<unknown> | unknown): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.logger.warn(`${this.name} failed: ${toError(err).message}`);
    }
  }

  private async awaitRunInProgress(): Promise<void> {
    const running = this.running;
    if (!running) return;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = await Promise.race([
      running.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(resolve, TICK_STOP_TIMEOUT_MS, true);
      }),
    ]);
    clearTimeout(timer);
    if (gaveUp) {
      this.logger.warn(
        `${this.name}: stopped waiting for the run in progress after ${TICK_STOP_TIMEOUT_MS / 1000}s; ` +
          'shutdown goes on without it.',
      );
    }
  }
}
