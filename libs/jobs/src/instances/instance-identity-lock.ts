import { Logger } from '@nestjs/common';
import type pg from 'pg';
import { toError } from '../common/errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import { isOwnSession } from '../database/session-probe.js';
import { instancesSql } from './instances.sql.js';

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/**
 * What taking the id's lock came to: this instance holds it; another session does; or the
 * connection goes through a transaction-mode pooler, where no session lock can vouch for the id.
 */
export type IdentityClaim = 'held' | 'heldElsewhere' | 'noSession';

/**
 * A session advisory lock on this instance's id, held on a connection of its own for the
 * instance's life: proof that a live process answers to the id. A heartbeat alone cannot tell a
 * live twin from a crashed predecessor whose last heartbeat is still fresh; a lock is released by
 * PostgreSQL the moment the holder's connection closes, so a restart under the same id is not kept
 * waiting while a live twin is refused.
 *
 * Behind a transaction-mode pooler a session lock would stay with whichever server connection took
 * it, held after this process is gone and re-entered by any client the pooler hands that server
 * connection to: it would prove nothing, and leak. So the connection is first asked whether it is a
 * session of its own, and when it is not no lock is taken (`'noSession'`): the heartbeat row decides
 * (see `InstanceHeartbeat`).
 */
export class InstanceIdentityLock {
  private readonly logger = new Logger('JobsInstances');
  private readonly sql: ReturnType<typeof instancesSql>;
  private client?: pg.Client;
  private reconnectTimer?: NodeJS.Timeout;
  private reconnectDelay = RECONNECT_MIN_MS;
  private released = true;

  constructor(
    private readonly db: JobsDatabase,
    private readonly instanceId: string,
  ) {
    this.sql = instancesSql(db.schema);
  }

  /** Takes the lock, on a connection kept for as long as it is held. */
  async acquire(): Promise<IdentityClaim> {
    this.released = false;
    const client = this.db.createSessionClient('instance');
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    let claim: IdentityClaim = 'noSession';
    try {
      await client.connect();
      if (await isOwnSession(this.db, client)) {
        const [{ held }] = (
          await client.query<{ held: boolean }>(this.sql.lockIdentity, [
            this.db.schema.name,
            this.instanceId,
          ])
        ).rows;
        claim = held ? 'held' : 'heldElsewhere';
      }
      if (claim === 'held' && !this.released) {
        this.client = client;
        this.reconnectDelay = RECONNECT_MIN_MS;
        return claim;
      }
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    await client.end().catch(() => undefined);
    return claim;
  }

  /** Releases the lock (by closing its connection). Idempotent. */
  async release(): Promise<void> {
    this.released = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  /** The connection dropped and the lock with it: take it again, or say loudly who has it. */
  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.released) return;
    this.logger.warn(`The connection holding instance id ${this.instanceId} dropped; retaking it.`);
    this.scheduleRetake();
  }

  private scheduleRetake(): void {
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(delay * 2, RECONNECT_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.acquire().then(
        (claim) => {
          if (claim === 'heldElsewhere') {
            this.logger.error(
              `Another process took instance id ${this.instanceId} while this one was disconnected; ` +
                'its reaper may requeue the jobs running here. Give every instance its own instanceId.',
            );
          } else if (claim === 'noSession') {
            this.logger.warn(
              `Instance id ${this.instanceId} is no longer locked: the database is now reached through a ` +
                'transaction-mode pooler. The heartbeat alone vouches for it.',
            );
          }
        },
        (err: unknown) => {
          if (this.released) return;
          this.logger.warn(
            `Retaking instance id ${this.instanceId} failed: ${toError(err).message}`,
          );
          this.scheduleRetake();
        },
      );
    }, delay);
  }
}
