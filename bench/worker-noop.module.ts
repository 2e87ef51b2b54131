/** The `workerModule` of `bench/worker-roundtrip.ts`: one worker task that does nothing. */
import { Injectable, Module } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';

@JobTask({ name: 'bench.workerNoop', worker: true })
@Injectable()
export class WorkerNoopTask implements JobTaskHandler {
  run(): void {}
}

@Module({ providers: [WorkerNoopTask] })
export class WorkerNoopModule {}
