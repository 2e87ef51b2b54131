import { Logger } from '@nestjs/common';
import type pg from 'pg';
import { toError } from '../common/errors.js';
import type { JobsDatabase } from '../database/jobs-database.js';
import { instancesSql } from './instances.sql.js';

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/**
 * A session advisory lock on this instance's id, held on a connection of its own for the
 * instance's life: proof that a live process answers to the id. A heartbeat alone cannot tell a
 * live twin from a crashed predecessor whose last heartbeat is still fresh; a lock is released by
 * PostgreSQL the moment the holder's connection closes, so a restart under the same id is not kept
 * waiting while a live twin is refused.
 *
 * Behind a transaction-mode pooler a session lock stays with whichever server connection took it:
 * the lock then proves little, and the heartbeat decides (see `InstanceHeartbeat`).
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

  /** Takes the lock: `true` if this instance holds it now, `false` if another session does. */
  async acquire(): Promise<boolean> {
    this.released = false;
    const client = this.db.createSessionClient('instance');
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      const [{ held }] = (
        await client.query<{ held: boolean }>(this.sql.lockIdentity, [
          this.db.schema.name,
          this.instanceId,
        ])
      ).rows;
      if (held && !this.released) {
        this.client = client;
        this.reconnectDelay = RECONNECT_MIN_MS;
        return true;
      }
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    await client.end().catch(() => undefined);
    return false;
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
        (held) => {
          if (!held) {
            this.logger.error(
              `Another process took instance id ${this.instanceId} while this one was disconnected; ` +
                'its reaper may requeue the jobs running here. Give every instance its own instanceId.',
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
