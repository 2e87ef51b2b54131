import type { Logger } from '@nestjs/common';

/**
 * A named periodic task that never overlaps itself: the next run is scheduled only after the
 * previous one settles (unlike `setInterval`, which piles up runs behind a slow one). A failing
 * run is logged and the tick goes on. `stop()` waits for a run in progress.
 */
export class Tick {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown> | unknown,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce().finally(() => {
        this.running = undefined;
        this.schedule();
      });
    }, this.intervalMs);
  }

  private async runOnce(): Promise<void> {
    try {
      await this.run();
    } catch (err) {
      this.logger.warn(`${this.name} failed: ${(err as Error)?.message ?? String(err)}`);
    }
  }
}
