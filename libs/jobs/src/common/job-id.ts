import { randomFillSync } from 'node:crypto';

/** Random bytes fetched from the system at once: one call per this many ids, not one per id. */
const RANDOM_POOL_IDS = 128;
const random = Buffer.allocUnsafe(RANDOM_POOL_IDS * 10);
let randomOffset = random.length;
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A new job id: a UUID version 7 (RFC 9562), its first 48 bits the time in milliseconds, the other
 * 74 random. Ids made close in time sort close together, so the rows a drain touches in the
 * primary keys of the queue and of history (claimed, then completed) sit on the few index pages
 * most recently written, instead of one random page of a big history per job: fewer pages to read,
 * dirty and write in full to the WAL after each checkpoint. The order among jobs is still `seq`'s,
 * not the ids'.
 */
export function newJobId(): string {
  if (randomOffset === random.length) {
    randomFillSync(random);
    randomOffset = 0;
  }
  const r = randomOffset;
  randomOffset += 10;
  const ms = Date.now();
  // 48 bits of milliseconds: the high 16 through division, the low 32 with >>> (exact in doubles).
  const high = Math.floor(ms / 2 ** 32);
  const low = ms >>> 0;
  return (
    HEX[(high >>> 8) & 0xff] +
    HEX[high & 0xff] +
    HEX[low >>> 24] +
    HEX[(low >>> 16) & 0xff] +
    '-' +
    HEX[(low >>> 8) & 0xff] +
    HEX[low & 0xff] +
    '-' +
    HEX[0x70 | (random[r] & 0x0f)] +
    HEX[random[r + 1]] +
    '-' +
    HEX[0x80 | (random[r + 2] & 0x3f)] +
    HEX[random[r + 3]] +
    '-' +
    HEX[random[r + 4]] +
    HEX[random[r + 5]] +
    HEX[random[r + 6]] +
    HEX[random[r + 7]] +
    HEX[random[r + 8]] +
    HEX[random[r + 9]]
  );
}
