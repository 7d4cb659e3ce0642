/** A JSON primitive. */
export type JsonPrimitive = string | number | boolean | null;

/** Any value that survives `JSON.parse(JSON.stringify(value))` unchanged. */
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;

/** A JSON object. */
export interface JsonObject {
  [key: string]: JsonValue;
}
