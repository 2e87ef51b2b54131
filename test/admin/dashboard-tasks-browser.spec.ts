import { join } from 'node:path';
import { Injectable } from '@nestjs/common';
import { defineTask, JobTask } from 'nestjs-pg-jobs';
import type { JobTaskHandler } from 'nestjs-pg-jobs';
import { z } from 'zod';
import { ARTIFACTS, UI_TIMEOUT, useDashboard } from '../support/dashboard.js';

const Invite = defineTask({
  name: 'invite',
  payloadSchema: z.object({ email: z.email(), team: z.string() }),
});

@JobTask(Invite)
@Injectable()
class InviteTask implements JobTaskHandler<typeof Invite> {
  run(): void {}
}

@JobTask('untyped')
@Injectable()
class UntypedTask implements JobTaskHandler {
  run(): void {}
}

const dashboard = useDashboard({ tasks: [InviteTask, UntypedTask] });

it("lists the instance's tasks, with the JSON Schema of a typed task's payload", async () => {
  const { page, problems } = await dashboard.openPage();
  const invite = page.locator('#task-list tr[data-task="invite"]');
  await invite.waitFor({ timeout: UI_TIMEOUT });
  await invite.locator('summary').click();
  const schema = JSON.parse((await invite.locator('pre').textContent()) ?? '') as unknown;
  expect(schema).toMatchObject({
    type: 'object',
    properties: { email: { type: 'string', format: 'email' }, team: { type: 'string' } },
    required: ['email', 'team'],
  });
  await expect(page.locator('#task-list tr[data-task="untyped"]').textContent()).resolves.toContain(
    'none',
  );
  await page.screenshot({ path: join(ARTIFACTS, 'dashboard-tasks.png'), fullPage: true });
  expect(problems).toEqual([]);
});
