import { readFileSync } from 'node:fs';
import { isObject } from './tokens.js';
import type { JsonObject } from './types.js';

const FIXTURES = new URL('../fixtures/', import.meta.url);

function read(name: string): string {
  if (!/^[a-z0-9-]+(\.chunks\.txt|\.json|\.sse)$/.test(name)) throw new Error(`Not a recording name: ${JSON.stringify(name)}.`);
  return readFileSync(new URL(name, FIXTURES), 'utf8');
}

/**
 * The events of a recorded stream in `fixtures/` (a `.chunks.txt` file: one event's `data` JSON
 * per line), for `{ replay: { events } }`. See `fixtures/SOURCES.md` for where each was recorded.
 */
export function recordedEvents(name: string): JsonObject[] {
  return read(name)
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      const event: unknown = JSON.parse(line);
      if (!isObject(event)) throw new Error(`${name}, line ${index + 1}: not a JSON object.`);
      return event;
    });
}

/** A recorded JSON body in `fixtures/` (a `.json` file), for `{ replay: { status, body } }`. */
export function recordedBody(name: string): JsonObject {
  const body: unknown = JSON.parse(read(name));
  if (!isObject(body)) throw new Error(`${name}: not a JSON object.`);
  return body;
}

/** A raw recorded event-stream body in `fixtures/` (a `.sse` file, `data:` frames as sent), for `{ replay: { sse } }`. */
export function recordedSse(name: string): string {
  if (!name.endsWith('.sse')) throw new Error(`Not a raw stream recording: ${JSON.stringify(name)}.`);
  return read(name);
}

/**
 * The responses of a recorded `.chunks.txt` holding several streamed responses one after another
 * (each starts with `response.created`), one event list each.
 */
export function recordedEventStreams(name: string): JsonObject[][] {
  const streams: JsonObject[][] = [];
  for (const event of recordedEvents(name)) {
    if (event.type === 'response.created' || streams.length === 0) streams.push([]);
    streams.at(-1)!.push(event);
  }
  return streams;
}
