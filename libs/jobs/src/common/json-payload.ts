import { InvalidPayloadError } from '../errors/jobs.errors.js';

/**
 * `JSON.stringify` quietly drops functions, turns `NaN` into `null` and throws an unhelpful
 * message on cycles and BigInt: a task would then run on data other than what was enqueued. Refuse
 * instead, naming the path of the first value that would not survive.
 */
export function serialisePayload(payload: unknown): string {
  assertJsonSafe(payload, '$', new Set());
  return JSON.stringify(payload);
}

function assertJsonSafe(value: unknown, path: string, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value))
        throw new InvalidPayloadError(path, `is ${value}, which JSON turns into null`);
      return;
    case 'bigint':
      throw new InvalidPayloadError(path, 'is a BigInt; pass it as a string');
    case 'function':
      throw new InvalidPayloadError(path, 'is a function');
    case 'symbol':
      throw new InvalidPayloadError(path, 'is a symbol');
    case 'undefined':
      throw new InvalidPayloadError(path, 'is undefined');
  }
  if (value === null) return;
  const object = value as object;
  if (typeof (object as { toJSON?: unknown }).toJSON === 'function') {
    // Dates and the like: what crosses is what toJSON returns.
    assertJsonSafe((object as { toJSON: () => unknown }).toJSON(), path, ancestors);
    return;
  }
  if (ancestors.has(object)) throw new InvalidPayloadError(path, 'refers back to itself (a cycle)');
  ancestors.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, index) => assertJsonSafe(item, `${path}[${index}]`, ancestors));
  } else {
    const proto = Object.getPrototypeOf(object);
    if (proto !== Object.prototype && proto !== null) {
      throw new InvalidPayloadError(
        path,
        `is a ${proto?.constructor?.name ?? 'class'} instance, not plain data`,
      );
    }
    for (const [key, item] of Object.entries(object)) {
      if (item !== undefined) assertJsonSafe(item, `${path}.${key}`, ancestors);
    }
  }
  ancestors.delete(object);
}
