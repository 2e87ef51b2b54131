import { InvalidJobOptionsError, UnknownTaskError } from '../errors/jobs.errors.js';
import { validateJob } from './validate-job.js';
import type { JobDefaults } from './validate-job.js';

const defaults: JobDefaults = {
  taskMaxRetries: (task) => (task === 'picky' ? 1 : undefined),
  taskQueue: (task) => (task === 'picky' ? 'picky-queue' : 'default'),
  taskPayloadSchema: () => undefined,
  isKnownTask: (task) => task === 'known' || task === 'picky',
  knownTasks: () => ['known', 'picky'],
  allowUnknownTasks: false,
  maxRetries: 5,
};

describe('validateJob', () => {
  it('takes maxRetries from the job, else the task, else the module', () => {
    expect(validateJob({ task: 'known', maxRetries: 0 }, defaults).maxRetries).toBe(0);
    expect(validateJob({ task: 'picky' }, defaults).maxRetries).toBe(1);
    expect(validateJob({ task: 'known' }, defaults).maxRetries).toBe(5);
  });

  it('gives every job a fresh id and an empty object payload by default', () => {
    const a = validateJob({ task: 'known' }, defaults);
    const b = validateJob({ task: 'known' }, defaults);
    expect(a.id).not.toBe(b.id);
    expect(a.payload).toBe('{}');
  });

  it('refuses unknown tasks unless unknown tasks are allowed', () => {
    expect(() => validateJob({ task: 'other' }, defaults)).toThrow(UnknownTaskError);
    expect(validateJob({ task: 'other' }, { ...defaults, allowUnknownTasks: true }).task).toBe(
      'other',
    );
  });

  it('refuses a non-boolean flag', () => {
    expect(() => validateJob({ task: 'known', promise: 'yes' as never }, defaults)).toThrow(
      InvalidJobOptionsError,
    );
  });

  it("files a job under its task's queue, and an unknown task's under the default queue", () => {
    expect(validateJob({ task: 'picky' }, defaults).queue).toBe('picky-queue');
    expect(validateJob({ task: 'other' }, { ...defaults, allowUnknownTasks: true }).queue).toBe(
      'default',
    );
  });

  it('takes a groupKey as a non-empty string of at most 200 characters', () => {
    expect(validateJob({ task: 'known', groupKey: 'tenant-1' }, defaults).groupKey).toBe(
      'tenant-1',
    );
    expect(validateJob({ task: 'known' }, defaults).groupKey).toBeNull();
    for (const groupKey of ['', 'x'.repeat(201), 42]) {
      expect(() => validateJob({ task: 'known', groupKey: groupKey as never }, defaults)).toThrow(
        InvalidJobOptionsError,
      );
    }
  });
});
