import { InvalidCronOptionError } from '../errors/jobs.errors.js';
import { cronMethodTask } from './cron-method-task.js';
import { readCronMetadataKeys } from './schedule-metadata.js';
import { loadSchedulePeer } from './schedule-peer.js';

const defaults = { timezone: 'UTC', maxRetries: 0 };

describe('cronMethodTask', () => {
  it("makes a task named after the @Cron's name, with its schedule in the module's zone, no retries and overlapping allowed", () => {
    expect(
      cronMethodTask('Jobs.tick', { cronTime: '* * * * * *', name: 'tick' }, undefined, defaults),
    ).toEqual({
      options: {
        name: 'tick',
        cron: '* * * * * *',
        timezone: 'UTC',
        maxRetries: 0,
        overlap: 'allow',
        timeout: undefined,
        missedSlotGrace: undefined,
        missedSlots: undefined,
      },
      unnamed: false,
    });
  });

  it('names an unnamed method Class.method, and says so', () => {
    const { options, unnamed } = cronMethodTask(
      'Jobs.tick',
      { cronTime: '@hourly' },
      undefined,
      defaults,
    );
    expect([options.name, unnamed]).toEqual(['Jobs.tick', true]);
  });

  it('maps waitForCompletion, threshold, utcOffset, disabled and @DurableCron', () => {
    const task = (cron: object, durable?: object) =>
      cronMethodTask('Jobs.tick', { cronTime: '0 * * * *', ...cron }, durable, defaults).options;
    expect(task({ waitForCompletion: true }).overlap).toBe('skip');
    expect(task({ threshold: 1500 }).missedSlotGrace).toBe(1.5);
    expect(task({ utcOffset: -150 }).timezone).toBe('UTC-02:30');
    expect(task({ utcOffset: 0 }).timezone).toBe('UTC');
    expect(task({ timeZone: 'Asia/Tokyo' }).timezone).toBe('Asia/Tokyo');
    expect(task({ disabled: true })).toEqual({
      name: 'Jobs.tick',
      maxRetries: 0,
      timeout: undefined,
    });
    expect(task({}, { maxRetries: 3, timeout: 20, missedSlots: 'runOnce' })).toEqual(
      expect.objectContaining({ maxRetries: 3, timeout: 20, missedSlots: 'runOnce' }),
    );
  });

  it('takes a Date, and a Luxon DateTime as the Date it stands for (a one-off slot)', () => {
    const at = new Date('2030-01-01T00:00:00Z');
    expect(cronMethodTask('J.m', { cronTime: at }, undefined, defaults).options.cron).toBe(at);
    const dateTime = { toJSDate: () => at };
    expect(cronMethodTask('J.m', { cronTime: dateTime }, undefined, defaults).options.cron).toBe(
      at,
    );
  });

  it.each([
    [{ cronTime: '* * * * *', name: 'has space' }, '"name"'],
    [{ cronTime: 42 }, '"cronTime"'],
    [
      { cronTime: '* * * * *', timeZone: 'Europe/Paris', utcOffset: 60 },
      'cannot be given with timeZone',
    ],
    [{ cronTime: '* * * * *', utcOffset: '+02:00' }, '"utcOffset"'],
    [{ cronTime: '* * * * *', utcOffset: 30.5 }, '"utcOffset"'],
    [{ cronTime: '* * * * *', timeZone: 'Mars/Olympus' }, '"timeZone"'],
    [{ cronTime: '* * * * *', threshold: 0 }, '"threshold"'],
  ])('refuses %p, naming the method and the option', (cron, message) => {
    const call = () => cronMethodTask('Jobs.tick', cron, undefined, defaults);
    expect(call).toThrow(InvalidCronOptionError);
    expect(call).toThrow('@Cron() on Jobs.tick');
    expect(call).toThrow(message);
  });
});

describe('readCronMetadataKeys', () => {
  it('finds where this @nestjs/schedule keeps the scheduler type and the cron options', async () => {
    expect(readCronMetadataKeys(await loadSchedulePeer())).toEqual({
      type: 'SCHEDULER_TYPE',
      cronType: 1,
      options: 'SCHEDULE_CRON_OPTIONS',
    });
  });
});
