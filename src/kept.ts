/**
 * A hot-path memo of at most `max` entries, forgotten all at once when full: no LRU bookkeeping
 * per lookup, and whoever fills it (an attacker with endless distinct values) only makes the next
 * lookups pay what they would pay without it. Callers keep only what is bounded in size.
 */
export class Kept<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly max: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  keep(key: K, value: V): V {
    if (this.entries.size >= this.max) this.entries.clear();
    this.entries.set(key, value);
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * A copy that shares no memory with the request's header string (V8 keeps a slice's parent alive):
 * what a memo keys on must not hold a whole request head.
 */
export function detached(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}
