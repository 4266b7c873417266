/**
 * A histogram and a counter for the per-request metrics whose label combinations are bound once:
 * a bound child counts into its own numbers, with none of prom-client's per-call work (a labels
 * object, its validation and a key string for every `observe` and `inc`, about 1 KB per request;
 * bench/RESULTS.md, issue 42). Each registers in a prom-client registry as a metric of its own
 * (name, help, type, `get()`), so /metrics and the cluster primary's aggregate read it as any other,
 * in prom-client's exposition (buckets cumulative, `le` first, `+Inf`, `_sum`, `_count`).
 */

import type { Registry } from "prom-client";

/** One sample as prom-client's registry reads it from `get()`. */
interface Sample {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName?: string;
}

/** What `get()` gives the registry: prom-client's shape of a metric with its samples. */
export interface Exposed {
  readonly name: string;
  readonly help: string;
  readonly type: "histogram" | "counter";
  readonly values: Sample[];
  readonly aggregator: "sum";
}

interface Definition<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  readonly registers: readonly Registry[];
}

/** Label values in the order of `labelNames`; each child is made once per combination. */
abstract class Bound<L extends string, Child> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = "sum" as const;
  readonly labelNames: readonly L[];
  protected readonly children = new Map<
    string,
    { readonly labels: Record<string, string>; readonly child: Child }
  >();

  constructor(definition: Definition<L>) {
    this.name = definition.name;
    this.help = definition.help;
    this.labelNames = definition.labelNames;
    for (const registry of definition.registers) registry.registerMetric(this as never);
  }

  /** The child of one combination of label values: kept, so bind it once and count on it. */
  labels(...values: string[]): Child {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`);
    }
    const key = values.join("\u0000");
    const found = this.children.get(key);
    if (found) return found.child;
    const labels: Record<string, string> = {};
    this.labelNames.forEach((name, i) => {
      labels[name] = values[i]!;
    });
    const child = this.make();
    this.children.set(key, { labels, child });
    return child;
  }

  /** prom-client's registry resets every metric it holds (tests). */
  reset(): void {
    this.children.clear();
  }

  protected abstract make(): Child;
}

export class BoundHistogramChild {
  /** Observations per bucket (not cumulative); the last slot is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class BoundHistogram<L extends string> extends Bound<L, BoundHistogramChild> {
  readonly type = "histogram" as const;
  private readonly bounds: readonly number[];

  constructor(definition: Definition<L> & { readonly buckets: readonly number[] }) {
    super(definition);
    this.bounds = [...definition.buckets].sort((a, b) => a - b);
  }

  protected make(): BoundHistogramChild {
    return new BoundHistogramChild(this.bounds);
  }

  async get(): Promise<Exposed> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, child } of this.children.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += child.counts[i]!;
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: "+Inf", ...labels }, value: child.count, metricName: bucket });
      values.push({ labels, value: child.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: child.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class BoundCounterChild {
  value = 0;

  inc(by = 1): void {
    this.value += by;
  }
}

export class BoundCounter<L extends string> extends Bound<L, BoundCounterChild> {
  readonly type = "counter" as const;

  protected make(): BoundCounterChild {
    return new BoundCounterChild();
  }

  async get(): Promise<Exposed> {
    const values: Sample[] = [];
    for (const { labels, child } of this.children.values()) {
      values.push({ labels, value: child.value });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
