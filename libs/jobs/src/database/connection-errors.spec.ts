import { isConnectionError, isNotSentError } from './connection-errors.js';

describe('isConnectionError', () => {
  it.each([
    [
      'a refused connection',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    ],
    ['a reset socket', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    [
      'pg_terminate_backend',
      Object.assign(new Error('terminating connection due to administrator command'), {
        code: '57P01',
      }),
    ],
    [
      'a server starting up',
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
    ],
    [
      'a standby refusing a write during a failover',
      Object.assign(new Error('cannot execute UPDATE in a read-only transaction'), {
        code: '25006',
      }),
    ],
    ['a connection exception', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['a socket pg saw close', new Error('Connection terminated unexpectedly')],
    ['a pool that could not connect in time', new Error('timeout exceeded when trying to connect')],
  ])('retries after %s', (_what, err) => {
    expect(isConnectionError(err)).toBe(true);
  });

  it.each([
    ['a syntax error', Object.assign(new Error('syntax error at or near "x"'), { code: '42601' })],
    [
      'a missing database',
      Object.assign(new Error('database "x" does not exist'), { code: '3D000' }),
    ],
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a plain error', new Error('boom')],
    ['a thrown string', 'Connection terminated'],
    ['nothing', undefined],
  ])('does not retry %s', (_what, err) => {
    expect(isConnectionError(err)).toBe(false);
  });
});

describe('isNotSentError', () => {
  const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

  it.each([
    ['a refused connection', coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['an unknown host', coded('getaddrinfo ENOTFOUND db', 'ENOTFOUND')],
    ['a server starting up', coded('the database system is starting up', '57P03')],
    ['too many connections', coded('sorry, too many clients already', '53300')],
    [
      'a standby refusing a write',
      coded('cannot execute INSERT in a read-only transaction', '25006'),
    ],
    ['a pool that could not connect in time', new Error('timeout exceeded when trying to connect')],
    [
      'a client that timed out connecting',
      new Error('Connection terminated due to connection timeout'),
    ],
    [
      'a client broken before the query',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
  ])('says nothing was sent after %s', (_what, err) => {
    expect(isNotSentError(err)).toBe(true);
  });

  it.each([
    ['pg_terminate_backend', coded('terminating connection due to administrator command', '57P01')],
    ['a socket pg saw close', new Error('Connection terminated unexpectedly')],
    ['a reset socket', coded('read ECONNRESET', 'ECONNRESET')],
    ['a timed-out socket', coded('read ETIMEDOUT', 'ETIMEDOUT')],
    ['an error that is no connection error', coded('duplicate key', '23505')],
  ])('does not after %s (it may have committed)', (_what, err) => {
    expect(isNotSentError(err)).toBe(false);
  });
});
