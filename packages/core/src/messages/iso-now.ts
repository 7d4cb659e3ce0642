let second = Number.NaN;
/** The ISO 8601 text of `second`, without its milliseconds and `Z`: `2026-11-24T08:12:33.`. */
let secondPrefix = '';

/**
 * The current time as an ISO 8601 string (`2026-11-24T08:12:33.045Z`, as `toISOString` gives it).
 * `toISOString` runs at most once per second; within one, only the milliseconds are appended.
 */
export function isoNow(): string {
  const ms = Date.now();
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    second = s;
    const iso = new Date(s * 1000).toISOString();
    secondPrefix = iso.slice(0, iso.length - 4);
  }
  const fraction = ms - s * 1000;
  return `${secondPrefix}${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z`;
}
