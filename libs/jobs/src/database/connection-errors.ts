const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** SQLSTATEs of a server that is going away or not taking connections yet. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);

/**
 * `pg` reports a lost or refused connection without a code of its own, only in its message: these
 * are the messages of pg 8 and pg-pool 3.
 */
const DRIVER_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /is not queryable/,
  /Connection ended unexpectedly/,
];

/**
 * Whether `err` says the database could not be reached (as opposed to refusing the statement): the
 * kind of failure worth retrying once it comes back.
 */
export function isConnectionError(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08')) return true;
  }
  return typeof message === 'string' && DRIVER_MESSAGES.some((pattern) => pattern.test(message));
}
