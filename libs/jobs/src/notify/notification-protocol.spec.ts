import {
  endNotification,
  NOTIFIED_ERROR_BYTES,
  parseNotification,
} from './notification-protocol.js';

const ID = '0190d5a2-0000-7000-8000-000000000000';

describe('endNotification', () => {
  it('carries a short error whole', () => {
    expect(parseNotification(endNotification(ID, 'failed', 'boom'))).toEqual({
      event: 'jobCompleted',
      id: ID,
      state: 'failed',
      error: 'boom',
    });
  });

  it.each([
    ['2,000 emoji (8,000 bytes)', '\u{1F600}'.repeat(2_000)],
    ['control characters, six bytes each in JSON', '\u0001'.repeat(5_000)],
    ['newlines and quotes', '"\n'.repeat(5_000)],
  ])('cuts %s to a prefix whose JSON fits its bound', (_what, error) => {
    const notification = endNotification(ID, 'failed', error);
    const parsed = parseNotification(notification) as { error: string };
    expect(Buffer.byteLength(JSON.stringify(parsed.error))).toBeLessThanOrEqual(
      NOTIFIED_ERROR_BYTES,
    );
    expect(parsed.error.length).toBeGreaterThan(0);
    expect(error.startsWith(parsed.error)).toBe(true);
    expect(Buffer.byteLength(notification)).toBeLessThan(8000);
  });
});
