import { InvalidJobOptionsError, UnknownTaskError } from '../errors/jobs.errors.js';
import { validateJob } from './validate-job.js';
import type { JobDefaults } from './validate-job.js';

const defaults: JobDefaults = {
  taskMaxRetries: (task) => (task === 'picky' ? 1 : undefined),
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
});
