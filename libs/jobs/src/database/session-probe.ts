import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { JobsDatabase } from './jobs-database.js';

/**
 * Whether the connected `client` is a server session of its own, which keeps what a session holds
 * (a `LISTEN`, a session advisory lock) from one statement to the next; or whether it goes through
 * a transaction-mode pooler (PgBouncer, and the like), which hands each of its transactions to
 * whichever server connection is free, and leaves what a session took with that server connection,
 * for the next client who gets it.
 *
 * Asked of the server, since a pooler does not say it is one: the client listens on a channel of
 * its own, a notification is sent from the pool (another connection), and a statement of the
 * client follows. On a session of its own the notification arrives before that statement's reply:
 * the sender signalled the listening backend before its own reply came back, and a backend
 * delivers what it was signalled before it reads its next command. Behind a transaction pooler it
 * never arrives: the listening server connection was handed back to the pooler, which drops
 * notifications that reach a server connection no client holds, and forwards those that reach one
 * another client holds to that client.
 */
export async function isOwnSession(db: JobsDatabase, client: pg.Client): Promise<boolean> {
  const channel = `nestjs_pg_jobs_probe_${randomBytes(8).toString('hex')}`;
  const token = randomBytes(8).toString('hex');
  let heard = false;
  const hear = (message: pg.Notification) => {
    if (message.channel === channel && message.payload === token) heard = true;
  };
  client.on('notification', hear);
  try {
    // The channel is made here of hex digits: nothing from outside enters the statement's text.
    await client.query(`LISTEN "${channel}"`);
    await db.query('SELECT pg_notify($1, $2)', [channel, token]);
    await client.query(`UNLISTEN "${channel}"`);
    return heard;
  } finally {
    client.off('notification', hear);
  }
}
