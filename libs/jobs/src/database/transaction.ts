import type pg from 'pg';

/**
 * Runs `work` in a transaction on `client`: committed when it returns, rolled back when it (or the
 * commit) throws. The work's error is the one thrown: a connection that dropped mid-way fails the
 * ROLLBACK too ("not queryable"), and the server rolls back a transaction whose session ended, so
 * the ROLLBACK's error never hides it; `failed` may fold both into the error to throw.
 */
export async function inTransaction<T>(
  client: pg.ClientBase,
  work: () => Promise<T>,
  failed: (err: unknown, rollbackError: Error | undefined) => unknown = (err) => err,
): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    const rollbackError = await client.query('ROLLBACK').then(
      () => undefined,
      (rollbackErr: Error) => rollbackErr,
    );
    throw failed(err, rollbackError);
  }
}
