import { isPlainObject } from '../messages/json.js';
import type { JsonObject, JsonValue } from '../contracts/json.js';

/**
 * A working-memory record with `change` merged in, as a new object (neither argument is changed):
 * objects are merged key by key, at any depth; arrays and every other value replace what was there;
 * `null` removes the key. Keys keep their order, new keys go last, so an unchanged record stays the
 * same text.
 */
export function mergeRecord(record: JsonObject, change: JsonObject): JsonObject {
  const merged: JsonObject = { ...record };
  for (const [key, value] of Object.entries(change)) {
    if (value === undefined) continue;
    if (value === null) {
      delete merged[key];
      continue;
    }
    const before = Object.hasOwn(merged, key) ? merged[key] : undefined;
    const next = isPlainObject(value) && isPlainObject(before) ? mergeRecord(before as JsonObject, value as JsonObject) : copy(value);
    // Defined, not assigned: a `__proto__` key of JSON is a key like any other, never the prototype.
    Object.defineProperty(merged, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return merged;
}

/**
 * The JSON Schema of a change to a record of `schema`: the same properties, none required, each
 * also accepting `null` (which removes it), nested objects likewise. Arrays keep their item schema:
 * an array replaces the whole array.
 */
export function changeSchema(schema: JsonObject): JsonObject {
  const { required: _required, $schema: _schema, ...rest } = schema;
  const properties = rest.properties;
  if (!isPlainObject(properties)) return rest;
  const partial: JsonObject = {};
  for (const [key, value] of Object.entries(properties)) {
    const schema = isPlainObject(value) ? { anyOf: [changeSchema(value as JsonObject), { type: 'null' }] } : (value as JsonValue);
    Object.defineProperty(partial, key, { value: schema, enumerable: true, writable: true, configurable: true });
  }
  return { ...rest, properties: partial };
}

function copy(value: JsonValue): JsonValue {
  return typeof value === 'object' && value !== null ? (JSON.parse(JSON.stringify(value)) as JsonValue) : value;
}
