import * as api from 'nestjs-pg-jobs';
import * as errors from '../../libs/jobs/src/errors/jobs.errors.js';
import * as defaults from '../../libs/jobs/src/options/defaults.js';

// The index lists its exports by name, so a new error or default is public only once listed.
it('exports every error class and every option default, under the same name', () => {
  const unlisted = Object.entries({ ...errors, ...defaults })
    .filter(([name, value]) => (api as Record<string, unknown>)[name] !== value)
    .map(([name]) => name);
  expect(unlisted).toEqual([]);
});

it('keeps the deprecated names as aliases of the renamed classes', () => {
  expect(api.InvalidJobsOptionError).toBe(api.InvalidModuleOptionError);
  expect(api.JobsMetrics).toBe(api.JobsMetricsService);
});

it('keeps the deprecated job event type names as aliases of the renamed ones', () => {
  // Checked by the type-check (`npm run lint`): each alias is exactly its new name.
  type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
  const event: Same<api.JobLifecycleEvent, api.JobEvent> = true;
  const type: Same<api.JobLifecycleEventType, api.JobEventType> = true;
  expect([event, type]).toEqual([true, true]);
});
