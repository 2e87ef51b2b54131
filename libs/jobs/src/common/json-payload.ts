import { InvalidPayloadError } from '../errors/jobs.errors.js';
import { unstorableReason } from './storable-text.js';

/** Makes the error that names the first value that would not survive JSON, and why. */
export type JsonRefusal = (path: string, reason: string) => Error;

/**
 * `JSON.stringify` quietly drops functions, turns `NaN` into `null` and throws an unhelpful
 * message on cycles and BigInt: a task would then run on data other than what was enqueued (or a
 * caller would read a result other than what the task returned). And a `jsonb` column refuses a
 * NUL character or a lone surrogate in a string or a key, failing the whole statement it is in.
 * Refuse instead, with `refuse`'s error naming the path of the first value that would not survive.
 */
export function serialiseJson(value: unknown, refuse: JsonRefusal): string {
  assertJsonSafe(value, '$', new Set(), refuse);
  return JSON.stringify(value);
}

/** A job's payload as JSON, or an `InvalidPayloadError` naming what would not survive. */
export function serialisePayload(payload: unknown): string {
  return serialiseJson(payload, (path, reason) => new InvalidPayloadError(path, reason));
}

function assertJsonSafe(
  value: unknown,
  path: string,
  ancestors: Set<object>,
  refuse: JsonRefusal,
): void {
  switch (typeof value) {
    case 'string': {
      const reason = unstorableReason(value);
      if (reason) throw refuse(path, reason);
      return;
    }
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw refuse(path, `is ${value}, which JSON turns into null`);
      return;
    case 'bigint':
      throw refuse(path, 'is a BigInt; pass it as a string');
    case 'function':
      throw refuse(path, 'is a function');
    case 'symbol':
      throw refuse(path, 'is a symbol');
    case 'undefined':
      throw refuse(path, 'is undefined');
  }
  if (value === null) return;
  const object = value as object;
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    // Dates and the like: what crosses is what toJSON returns.
    assertJsonSafe((object as { toJSON: () => unknown }).toJSON(), path, ancestors, refuse);
    return;
  }
  if (ancestors.has(object)) throw refuse(path, 'refers back to itself (a cycle)');
  ancestors.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, index) => assertJsonSafe(item, `${path}[${index}]`, ancestors, refuse));
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      throw refuse(path, `is a ${proto?.constructor?.name ?? 'class'} instance, not plain data`);
    }
    for (const [key, item] of Object.entries(object)) {
      if (item === undefined) continue;
      const keyReason = unstorableReason(key);
      if (keyReason) throw refuse(path, `has a key that ${keyReason}`);
      assertJsonSafe(item, `${path}.${key}`, ancestors, refuse);
    }
  }
  ancestors.delete(object);
}
