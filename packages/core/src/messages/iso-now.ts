let lastMs = Number.NaN;
let lastIso = '';

/**
 * The current time as an ISO 8601 string, formatted at most once per millisecond: a run stamps
 * its input, its response and its session within the same few.
 */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
