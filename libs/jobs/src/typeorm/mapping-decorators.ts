import type { Column as TypeOrmColumn } from 'typeorm/decorator/columns/Column.js';
import type { PrimaryColumn as TypeOrmPrimaryColumn } from 'typeorm/decorator/columns/PrimaryColumn.js';
import type { Entity as TypeOrmEntity } from 'typeorm/decorator/entity/Entity.js';
import { requireOptionalPeer } from '../common/optional-peer.js';

/*
 * TypeORM's mapping decorators, from their own modules, not TypeORM's index: importing the library
 * (whose index exports the entities) must not load the ORM, its drivers and query builders for an
 * app that never uses them. These few files only record the mappings in TypeORM's global metadata
 * store, where the app's `DataSource`, loading the rest, finds them.
 *
 * TypeORM is an optional peer: without it they record nothing, which no one reads, since only an
 * app with TypeORM has a `DataSource`. Required, not imported (TypeORM is CommonJS): the entity
 * classes are decorated while the library is imported.
 */

const none = () => () => undefined;

export const Entity: typeof TypeOrmEntity =
  requireOptionalPeer<{ Entity: typeof TypeOrmEntity }>('typeorm', 'decorator/entity/Entity.js')
    ?.Entity ?? none;

export const Column: typeof TypeOrmColumn =
  requireOptionalPeer<{ Column: typeof TypeOrmColumn }>('typeorm', 'decorator/columns/Column.js')
    ?.Column ?? none;

export const PrimaryColumn: typeof TypeOrmPrimaryColumn =
  requireOptionalPeer<{ PrimaryColumn: typeof TypeOrmPrimaryColumn }>(
    'typeorm',
    'decorator/columns/PrimaryColumn.js',
  )?.PrimaryColumn ?? none;
