import { randomFillSync } from 'node:crypto';

/** Random bytes fetched from the system at once: one call per this many ids, not one per id. */
const RANDOM_POOL_IDS = 128;
const random = Buffer.allocUnsafe(RANDOM_POOL_IDS * 10);
let randomOffset = random.length;
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** The millisecond of the last id made, and its counter (`COUNTER_BITS`). */
let lastMs = 0;
let counter = 0;
/** Bits of an id that count up within a millisecond: rand_a's 12 and the first 14 of rand_b. */
const COUNTER_BITS = 26;

/**
 * A new job id: a UUID version 7 (RFC 9562), its first 48 bits the time in milliseconds, the next
 * 26 a counter (method 1 of the RFC: started at random, its top bit clear, in each millisecond and
 * counting up within it), the other 48 random. Ids made close in time sort close together, so the
 * rows a drain touches in the primary keys of the queue and of history (claimed, then completed)
 * sit on the few index pages most recently written, instead of one random page of a big history
 * per job: fewer pages to read, dirty and write in full to the WAL after each checkpoint. And the
 * ids one process makes sort in the order it made them (while its clock goes forward), within a
 * millisecond too: the jobs of one `addJobs` or `addFlow` sort by id as they do in the queue (by
 * "seq"), so a statement that walks them by id (a flow's release of its dependents) writes them in
 * their claim order. Between processes the order among jobs is still "seq"'s, not the ids'. The
 * time is always the clock's (history's partitions are ranges of ids, by that time): a counter
 * that ran out, after 2^25 ids in one millisecond at the least (a process makes a few thousand),
 * would start again at random, as it does in each new millisecond.
 */
export function newJobId(): string {
  if (randomOffset === random.length) {
    randomFillSync(random);
    randomOffset = 0;
  }
  const r = randomOffset;
  randomOffset += 10;
  const now = Date.now();
  if (now === lastMs && counter < 2 ** COUNTER_BITS - 1) {
    counter++;
  } else {
    lastMs = now;
    // 25 random bits: the counter starts with its top bit clear, so that it has room to count.
    counter =
      (random[r] << 17) | (random[r + 1] << 9) | (random[r + 2] << 1) | (random[r + 3] >>> 7);
  }
  return formatted(lastMs, r);
}

/** The id of millisecond `ms`, the current `counter`, and the random bytes from `r + 4`. */
function formatted(ms: number, r: number): string {
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
    HEX[0x70 | (counter >>> 22)] +
    HEX[(counter >>> 14) & 0xff] +
    '-' +
    HEX[0x80 | ((counter >>> 8) & 0x3f)] +
    HEX[counter & 0xff] +
    '-' +
    HEX[random[r + 4]] +
    HEX[random[r + 5]] +
    HEX[random[r + 6]] +
    HEX[random[r + 7]] +
    HEX[random[r + 8]] +
    HEX[random[r + 9]]
  );
}
