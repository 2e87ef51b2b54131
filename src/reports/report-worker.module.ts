/**
 * The example's `workerModule`: every pool thread boots this module, so its tasks get their
 * dependencies injected there, off the main thread's event loop.
 */
import { Inject, Injectable, Module } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';

export interface ReportPayload {
  /** Count the primes up to this number: CPU work that would stall the HTTP server in-process. */
  upTo: number;
}

@Injectable()
export class PrimeCounter {
  count(upTo: number, signal: AbortSignal): number {
    let found = 0;
    for (let n = 2; n <= upTo; n++) {
      // A long computation checks its signal now and then, so a timeout can stop it.
      if (n % 100_000 === 0 && signal.aborted) throw signal.reason;
      let prime = true;
      for (let d = 2; d * d <= n; d++) {
        if (n % d === 0) {
          prime = false;
          break;
        }
      }
      if (prime) found++;
    }
    return found;
  }
}

@JobTask({ name: 'renderReport', worker: true, timeout: 60 })
@Injectable()
export class RenderReportTask implements JobTaskHandler<ReportPayload> {
  constructor(@Inject(PrimeCounter) private readonly primes: PrimeCounter) {}

  run(payload: ReportPayload, ctx: JobContext): { primes: number } {
    return { primes: this.primes.count(payload.upTo, ctx.signal) };
  }
}

@Module({ providers: [PrimeCounter, RenderReportTask] })
export class ReportWorkerModule {}
