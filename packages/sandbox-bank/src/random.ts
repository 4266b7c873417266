/**
 * Deterministic pseudo-randomness for demo data: the same seed gives the same customers, ids and
 * amounts on every run and after every reset. Never use it for anything secret.
 */

export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = Number.isFinite(seed) ? Math.trunc(seed) >>> 0 : 0;
  }

  /** mulberry32: a tiny, fast generator with a full 2^32 period; a float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  digits(count: number): string {
    let out = "";
    for (let i = 0; i < count; i++) out += String(this.int(0, 9));
    return out;
  }

  hex(count: number): string {
    let out = "";
    for (let i = 0; i < count; i++) out += this.int(0, 15).toString(16);
    return out;
  }

  /** Shaped like an RFC 4122 version 4 UUID, as PSU-IDs and resource ids are (SPEC 2.6). */
  uuid(): string {
    const variant = "89ab"[this.int(0, 3)];
    return `${this.hex(8)}-${this.hex(4)}-4${this.hex(3)}-${variant}${this.hex(3)}-${this.hex(12)}`;
  }
}

const BBAN_WEIGHTS = [5, 4, 3, 2, 7, 6, 5, 4, 3, 2] as const;

/** The MOD11 check digit of a Norwegian account number, or undefined when none exists (remainder 1). */
export function mod11CheckDigit(tenDigits: string): number | undefined {
  let sum = 0;
  for (let i = 0; i < BBAN_WEIGHTS.length; i++) sum += Number(tenDigits[i]) * BBAN_WEIGHTS[i]!;
  const check = (11 - (sum % 11)) % 11;
  return check === 10 ? undefined : check;
}

/** An 11-digit Norwegian account number (bank code, account group, number, MOD11 check digit). */
export function norwegianBban(random: SeededRandom, bankCode: string): string {
  for (;;) {
    const body = bankCode + random.digits(10 - bankCode.length);
    const check = mod11CheckDigit(body);
    if (check !== undefined) return body + String(check);
  }
}
