import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { TestingModule } from '@nestjs/testing';
import { InjectRepository, TypeOrmModule } from '@nestjs/typeorm';
import { Column, DataSource, Entity, PrimaryGeneratedColumn, Repository } from 'typeorm';
import { JobQueueService, JobTask, JobsModule, jobsEntities } from 'nestjs-pg-jobs';
import type { JobHistoryEntity, JobTaskHandler } from 'nestjs-pg-jobs';
import { runUntilIdle } from 'nestjs-pg-jobs/testing';
import { JobsDatabase } from '../../libs/jobs/src/database/jobs-database.js';
import { LATEST_SCHEMA_VERSION } from '../../libs/jobs/src/schema/migrations.js';
import { quietLogger } from '../support/jobs-app.js';
import { useTestDatabase } from '../support/test-database.js';

/**
 * The @nestjs/typeorm recipe of docs/getting-started.md, as an app writes it: `TypeOrmModule.forRoot()` owns the
 * connection, `JobsModule.forRootAsync()` shares its `DataSource`, jobs are enqueued in the app's
 * own transactions, and a report reads history through the exported entities, here in a schema
 * other than the default (so through `jobsEntities(schema)`).
 */
const SCHEMA = 'shop_jobs';
const { JobHistoryEntity: ShopJobHistory } = jobsEntities(SCHEMA);

@Entity('orders')
class Order {
  @PrimaryGeneratedColumn() id!: number;
  @Column('text') item!: string;
}

const shipped: number[] = [];

@JobTask('shipOrder')
@Injectable()
class ShipOrder implements JobTaskHandler<{ orderId: number }> {
  run(payload: { orderId: number }): void {
    shipped.push(payload.orderId);
  }
}

@Injectable()
class Checkout {
  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(JobQueueService) private readonly queue: JobQueueService,
  ) {}

  /** The order and its shipping job commit together, or neither does. */
  place(item: string, declined = false): Promise<{ orderId: number; jobId: string }> {
    return this.dataSource.transaction(async (manager) => {
      const order = await manager.save(Order, { item });
      const { id } = await this.queue.addJob({
        task: 'shipOrder',
        payload: { orderId: order.id },
        manager,
      });
      if (declined) throw new Error('payment declined');
      return { orderId: order.id, jobId: id };
    });
  }
}

@Injectable()
class JobsReport {
  constructor(
    @InjectRepository(ShopJobHistory) private readonly history: Repository<JobHistoryEntity>,
  ) {}

  completed(task: string): Promise<JobHistoryEntity[]> {
    return this.history.find({
      where: { task, state: 'completed' },
      order: { completedAt: 'ASC' },
    });
  }
}

function appModule(url: string) {
  @Module({
    imports: [
      // synchronize: true proves the jobs entities are left alone: were they synchronised, the
      // app's boot would create the module's tables before its migrations, which would then fail.
      TypeOrmModule.forRoot({
        type: 'postgres',
        url,
        entities: [Order],
        autoLoadEntities: true,
        synchronize: true,
      }),
      TypeOrmModule.forFeature(Object.values(jobsEntities(SCHEMA))),
      JobsModule.forRootAsync({
        inject: [DataSource],
        useFactory: (dataSource: DataSource) => ({ dataSource, schema: SCHEMA, pollingCheck: 0.2 }),
      }),
    ],
    providers: [ShipOrder, Checkout, JobsReport],
  })
  class ShopModule {}
  return ShopModule;
}

let app: TestingModule | undefined;
// Declared before useTestDatabase(): Jest runs afterAll hooks in order, and the app must close
// before its database is dropped.
afterAll(() => app?.close());
const db = useTestDatabase();
let dataSource: DataSource;
let queue: JobQueueService;

beforeAll(async () => {
  app = await Test.createTestingModule({ imports: [appModule(db.url)] })
    .setLogger(quietLogger)
    .compile();
  await app.init();
  dataSource = app.get(DataSource);
  queue = app.get(JobQueueService);
});

it("shares TypeOrmModule's DataSource, and migrates its schema", async () => {
  expect(app!.get(JobsDatabase, { strict: false }).dataSource).toBe(dataSource);
  expect(await db.query(`SELECT max(version) AS version FROM ${SCHEMA}.migrations`)).toEqual([
    { version: LATEST_SCHEMA_VERSION },
  ]);
});

it('runs a job enqueued in dataSource.transaction() once it commits, and never one rolled back', async () => {
  const checkout = app!.get(Checkout);
  const placed = await checkout.place('book');
  await expect(checkout.place('lamp', true)).rejects.toThrow('payment declined');

  await runUntilIdle(app!);
  expect(shipped).toEqual([placed.orderId]);
  expect((await queue.getJob(placed.jobId))?.state).toBe('completed');
  expect(await db.query(`SELECT item FROM orders`)).toEqual([{ item: 'book' }]);
  expect(await db.query(`SELECT count(*)::int AS n FROM ${SCHEMA}."jobHistory"`)).toEqual([
    { n: 1 },
  ]);
});

it('enqueues on a QueryRunner: its transaction decides whether the job exists', async () => {
  shipped.length = 0;
  const enqueueOn = async (commit: boolean) => {
    const runner = dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      const order = await runner.manager.save(Order, { item: commit ? 'kept' : 'undone' });
      const { id } = await queue.addJob({
        task: 'shipOrder',
        payload: { orderId: order.id },
        manager: runner.manager,
      });
      // Not visible outside the transaction yet.
      expect(await queue.getJob(id)).toBeNull();
      if (commit) await runner.commitTransaction();
      else await runner.rollbackTransaction();
      return { id, orderId: order.id };
    } finally {
      await runner.release();
    }
  };
  const undone = await enqueueOn(false);
  const kept = await enqueueOn(true);

  await runUntilIdle(app!);
  expect(shipped).toEqual([kept.orderId]);
  expect((await queue.getJob(kept.id))?.state).toBe('completed');
  expect(await queue.getJob(undone.id)).toBeNull();
});

it("reads the module's history through an exported entity and the app's repository", async () => {
  const rows = await app!.get(JobsReport).completed('shipOrder');
  expect(rows).toHaveLength(2);
  expect(rows[0]).toBeInstanceOf(ShopJobHistory);
  expect(rows.map((row) => ({ state: row.state, attempt: row.attempt }))).toEqual([
    { state: 'completed', attempt: 1 },
    { state: 'completed', attempt: 1 },
  ]);
  expect(rows[0].completedAt).toBeInstanceOf(Date);
  expect(rows.map((row) => (row.payload as { orderId: number }).orderId)).toEqual(
    expect.arrayContaining(shipped),
  );
});
