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

/**
 * SQLSTATEs of a server that is going away or not taking connections yet, or not taking writes:
 * `25006` (read_only_sql_transaction) is what a standby answers a write with, and during a
 * failover the connection may reach one before its promotion (a DNS name or proxy that switched
 * early, an old primary brought back as a standby). Pooled clients that received it are dropped by
 * the pool, so a retry connects anew, to wherever the address leads by then.
 */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300', '25006']);

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
 * Whether `err` says the database could not be reached, or cannot take writes yet (as opposed to
 * refusing the statement): the kind of failure worth retrying once it comes back.
 */
export function isConnectionError(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08')) return true;
  }
  return typeof message === 'string' && DRIVER_MESSAGES.some((pattern) => pattern.test(message));
}

/**
 * Of the connection errors, those raised before a statement was sent: a connection refused, not
 * found, or not made in time, a server not taking connections yet, a client already broken, or a
 * standby refusing a write. Whatever the statement was, it did not run. Any other connection error
 * (a reset, a termination, a reply that never came) may have come after the server committed.
 */
export function isNotSentError(err: unknown): boolean {
  if (!isConnectionError(err)) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return true;
  return typeof message === 'string' && NOT_SENT_MESSAGES.some((pattern) => pattern.test(message));
}

const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  // cannot_connect_now, too_many_connections, sqlclient_unable_to_establish_sqlconnection,
  // sqlserver_rejected_establishment_of_sqlconnection: the session never started.
  '57P03',
  '53300',
  '08001',
  '08004',
  // read_only_sql_transaction: the standby refused the write itself.
  '25006',
]);

const NOT_SENT_MESSAGES = [
  /timeout exceeded when trying to connect/,
  /^Connection terminated due to connection timeout/,
  /is not queryable/,
];
