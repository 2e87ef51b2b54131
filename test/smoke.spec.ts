import { Injectable } from '@nestjs/common';
import { JobTask } from 'nestjs-pg-jobs';
import type { JobContext, JobTaskHandler } from 'nestjs-pg-jobs';
import { startJobsApp, waitFor } from './support/jobs-app.js';
import { useTestDatabase } from './support/test-database.js';

const db = useTestDatabase();
const seen: string[] = [];

@Injectable()
class Greeter {
  greet(name: string) {
    return `hello ${name}`;
  }
}

@JobTask('greet')
@Injectable()
class GreetTask implements JobTaskHandler<{ name: string }> {
  constructor(private readonly greeter: Greeter) {}
  run(payload: { name: string }, ctx: JobContext) {
    seen.push(`${this.greeter.greet(payload.name)}#${ctx.attempt}`);
  }
}

it('runs a job', async () => {
  const app = await startJobsApp(db.url, { tasks: [GreetTask], providers: [Greeter] });
  try {
    const { id, promise } = await app.queue.addJob({ task: 'greet', payload: { name: 'a' }, promise: true });
    await promise;
    expect(seen).toEqual(['hello a#1']);
    expect((await app.queue.getJob(id))?.state).toBe('completed');
    await waitFor('x', () => true);
  } finally {
    await app.close();
  }
});
