/**
 * Narrowing `unknown` JSON into typed fixtures. A corpus file whose shape drifts must make the
 * tests fail loudly with the path of the bad field, not pass on `undefined`.
 */

export type JsonObject = Readonly<Record<string, unknown>>;

export function asObject(value: unknown, at: string): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`${at}: expected an object, got ${JSON.stringify(value)?.slice(0, 80)}`);
  }
  return value as JsonObject;
}

export function asArray(value: unknown, at: string): readonly unknown[] {
  if (!Array.isArray(value)) throw new TypeError(`${at}: expected an array`);
  return value;
}

export function asString(value: unknown, at: string): string {
  if (typeof value !== "string") throw new TypeError(`${at}: expected a string, got ${typeof value}`);
  return value;
}

export function stringField(object: JsonObject, key: string, at: string): string {
  return asString(object[key], `${at}.${key}`);
}

/** A field that is absent or `null` reads as `null`; anything else must be a string. */
export function nullableStringField(object: JsonObject, key: string, at: string): string | null {
  const value = object[key];
  return value === undefined || value === null ? null : asString(value, `${at}.${key}`);
}

export function optionalNumberField(object: JsonObject, key: string, at: string): number | undefined {
  const value = object[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number") throw new TypeError(`${at}.${key}: expected a number`);
  return value;
}

/** Absent → undefined; `null` → null; otherwise a boolean. */
export function optionalBooleanField(
  object: JsonObject,
  key: string,
  at: string,
): boolean | null | undefined {
  const value = object[key];
  if (value === undefined || value === null) return value;
  if (typeof value !== "boolean") throw new TypeError(`${at}.${key}: expected a boolean`);
  return value;
}

export function booleanField(object: JsonObject, key: string, at: string): boolean {
  const value = optionalBooleanField(object, key, at);
  if (typeof value !== "boolean") throw new TypeError(`${at}.${key}: expected a boolean`);
  return value;
}

export function stringArrayField(object: JsonObject, key: string, at: string): string[] {
  return asArray(object[key], `${at}.${key}`).map((item, i) => asString(item, `${at}.${key}[${i}]`));
}

/** `[["Name", "value"], …]` as recorded: header order and spelling kept. */
export function headerPairsField(object: JsonObject, key: string, at: string): [string, string][] {
  return asArray(object[key], `${at}.${key}`).map((pair, i) => {
    const [name, value, extra] = asArray(pair, `${at}.${key}[${i}]`);
    if (extra !== undefined) throw new TypeError(`${at}.${key}[${i}]: expected [name, value]`);
    return [asString(name, `${at}.${key}[${i}][0]`), asString(value, `${at}.${key}[${i}][1]`)];
  });
}
