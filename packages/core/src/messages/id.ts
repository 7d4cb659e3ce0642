/** A new random id (a UUID v4). */
export function generateId(): string {
  return globalThis.crypto.randomUUID();
}
