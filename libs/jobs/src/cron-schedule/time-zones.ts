/**
 * A fixed offset from UTC, `UTC+05:30` or `UTC-03:00`: what cron-parser (through Luxon) reads as a
 * zone without daylight saving. `Intl` does not know this form, so it is recognised here before
 * anything asks `Intl` about it.
 */
const FIXED_OFFSET_ZONE = /^UTC[+-](\d{2}):(\d{2})$/;
/** The widest offsets in use (UTC-12:00 to UTC+14:00), with room to spare. */
const MAX_OFFSET_MINUTES = 14 * 60;

/** Whether `timezone` is a fixed offset (see `FIXED_OFFSET_ZONE`), which never changes. */
export function isFixedOffsetZone(timezone: string): boolean {
  const match = FIXED_OFFSET_ZONE.exec(timezone);
  if (!match) return false;
  const [hours, minutes] = [Number(match[1]), Number(match[2])];
  return minutes < 60 && hours * 60 + minutes <= MAX_OFFSET_MINUTES;
}

/** Whether a schedule can be read in `timezone`: an IANA zone this runtime knows, or a fixed offset. */
export function isKnownTimeZone(timezone: unknown): timezone is string {
  if (typeof timezone !== 'string' || timezone.length === 0) return false;
  if (isFixedOffsetZone(timezone)) return true;
  // Node 22 and later (newer ICU) also take a bare offset such as "+02:00"; Node 20 refuses it.
  // Refused everywhere, so that the instances of a cluster agree whatever runtime each has: an
  // offset is written UTC+02:00.
  if (/^[+-]/.test(timezone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The zone of an offset in minutes east of UTC (`@nestjs/schedule`'s `utcOffset`): `UTC` for 0,
 * else `UTC±HH:MM`. `null` when it is not a whole number of minutes within ±14 h.
 */
export function fixedOffsetZone(minutes: number): string | null {
  if (!Number.isInteger(minutes) || Math.abs(minutes) > MAX_OFFSET_MINUTES) return null;
  if (minutes === 0) return 'UTC';
  const abs = Math.abs(minutes);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `UTC${minutes < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}
