import { Inject, Injectable, Logger } from '@nestjs/common';
import type pg from 'pg';
import { JobsDatabase } from '../database/jobs-database.js';
import { isOwnSession } from '../database/session-probe.js';
import { channelFor, parseNotification } from './notification-protocol.js';
import type { JobsNotification } from './notification-protocol.js';

const RECONNECT_MIN_MS = 100;
/** The longest wait between two tries to get `LISTEN` back: what a long outage costs at most. */
export const LISTEN_RECONNECT_MAX_MS = 5_000;

/** The notifications of type `E` (`newJob`, `jobCompleted`, ...). */
export type NotificationOf<E extends JobsNotification['event']> = Extract<
  JobsNotification,
  { readonly event: E }
>;

type NotificationHandler = (notification: JobsNotification) => void;
/**
 * Where the instance's `LISTEN` stands: `listening`; `reconnecting` after a failure (wake-ups and
 * awaited jobs wait for the polling tick meanwhile); `unavailable` behind a transaction-mode pooler,
 * where it cannot work and the instance runs on polling alone by design; `stopped`.
 */
export type ListenStatus = 'listening' | 'reconnecting' | 'unavailable' | 'stopped';
type ConnectedHandler = () => void;

/**
 * Holds the instance's `LISTEN` session, keeps it alive, and hands each notification to the
 * services that subscribed to its type (`on`): each service subscribes to what it owns (the runner
 * to `newJob`, `cancelJob` and `progress`, the queue state to `queuePaused`, the completion
 * waiters to `jobCompleted`), so no one routes notifications on their behalf.
 *
 * `LISTEN` belongs to one backend session, so it cannot share the pool: it gets a client of its own.
 * When that connection drops (a restart, `pg_terminate_backend`, a network blip) the client cannot
 * be reused, so a new one is made, with backoff. Whatever was notified while no session was
 * listening is lost, which is why every (re)connection is reported to `onConnected` handlers: they
 * poll once to catch up.
 *
 * Behind a transaction-mode pooler a `LISTEN` succeeds and then hears nothing: it stays with the
 * server connection it ran on, which the pooler hands to other clients. So every new session is
 * first asked whether it is a session of its own (`isOwnSession`); when it is not, the instance
 * runs on its polling tick alone, says so once, and does not try again (a pooler stays a pooler).
 */
@Injectable()
export class NotificationListener {
  private readonly logger = new Logger('JobsNotifications');
  private readonly handlers = new Map<JobsNotification['event'], NotificationHandler[]>();
  private readonly connectedHandlers: ConnectedHandler[] = [];
  private readonly channel: string;
  private client?: pg.Client;
  private reconnectTimer?: NodeJS.Timeout;
  private reconnectDelay = RECONNECT_MIN_MS;
  private stopped = true;
  private pooled = false;
  private connecting?: Promise<void>;

  constructor(@Inject(JobsDatabase) private readonly db: JobsDatabase) {
    this.channel = channelFor(db.schema);
  }

  /** Calls `handler` with every notification of type `event` this instance hears. */
  on<E extends JobsNotification['event']>(
    event: E,
    handler: (notification: NotificationOf<E>) => void,
  ): void {
    const handlers = this.handlers.get(event);
    if (handlers) handlers.push(handler as NotificationHandler);
    else this.handlers.set(event, [handler as NotificationHandler]);
  }

  /**
   * Calls `handler` on every (re)connection of `LISTEN`: what was notified while no session
   * listened is lost, so each subscriber looks for what it may have missed.
   */
  onConnected(handler: ConnectedHandler): void {
    this.connectedHandlers.push(handler);
  }

  get status(): ListenStatus {
    if (this.stopped) return 'stopped';
    if (this.pooled) return 'unavailable';
    return this.client ? 'listening' : 'reconnecting';
  }

  /** Starts listening; resolves after the first attempt, connected or not (polling covers the gap). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private connect(): Promise<void> {
    this.connecting = this.openSession().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async openSession(): Promise<void> {
    const client = this.db.createSessionClient('listen');
    // Without an 'error' listener a dropped connection would crash the host process.
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel !== this.channel) return;
      const notification = parseNotification(message.payload);
      if (notification) this.dispatch(notification);
    });
    try {
      await client.connect();
      if (!(await isOwnSession(this.db, client))) {
        await client.end().catch(() => undefined);
        this.pooled = true;
        this.logger.warn(
          `LISTEN is unavailable: the connection goes through a transaction-mode pooler (such as PgBouncer), ` +
            'where a LISTEN does not stay with its client. Running on polling alone: due jobs start, and awaited ' +
            'jobs settle, within pollingCheck. Give the module a direct (or session-mode) connection for prompt wake-ups.',
        );
        return;
      }
      await client.query(`LISTEN "${this.channel}"`);
    } catch (err) {
      await client.end().catch(() => undefined);
      this.logger.warn(
        `Cannot LISTEN on "${this.channel}" (${(err as Error).message}); relying on the polling tick until it works.`,
      );
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.reconnectDelay = RECONNECT_MIN_MS;
    for (const handler of this.connectedHandlers) this.safely(() => handler());
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.stopped) return;
    this.logger.warn(`LISTEN connection lost${err ? ` (${err.message})` : ''}; reconnecting.`);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    clearTimeout(this.reconnectTimer);
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, LISTEN_RECONNECT_MAX_MS);
    this.reconnectTimer = setTimeout(() => void this.connect(), delay);
  }

  private dispatch(notification: JobsNotification): void {
    const handlers = this.handlers.get(notification.event);
    if (!handlers) return;
    for (const handler of handlers) this.safely(() => handler(notification));
  }

  /** A handler's mistake must never take the listening session down with it. */
  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.logger.error(`Notification handler failed: ${(err as Error).message}`);
    }
  }
}
