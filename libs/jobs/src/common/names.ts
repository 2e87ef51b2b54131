/**
 * What task and schedule names are made of: safe in a log line, a metric label, a URL and a
 * NOTIFY payload without escaping, and short enough for an index.
 */
export const NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;

/** A job id: a UUID, checked before it reaches a `uuid` parameter (whose cast error says less). */
export const JOB_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
