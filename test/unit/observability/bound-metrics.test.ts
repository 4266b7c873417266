/**
 * The bound histogram and counter (src/observability/bound-metrics.ts) expose exactly what
 * prom-client's own would for the same observations: the same text on /metrics and the same
 * samples in the cluster primary's aggregate of two workers.
 */

import { AggregatorRegistry, Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { BoundCounter, BoundHistogram } from "../../../src/observability/bound-metrics.js";

const BUCKETS = [0.001, 0.01, 0.1, 1];
// At a bound, between bounds, below the first, above the last, and zero.
const OBSERVED: readonly [string, string, number][] = [
  ["ingress", "PSP_AI", 0.001],
  ["ingress", "PSP_AI", 0.0005],
  ["ingress", "PSP_AI", 0.05],
  ["ingress", "PSP_PI", 1],
  ["ingress", "PSP_PI", 7],
  ["ingress", "PSP_PI", 0],
  ["egress", "other", 0.2],
];

function pair(): { ours: Registry; theirs: Registry } {
  const ours = new Registry();
  const theirs = new Registry();
  const definition = { name: "d_seconds", help: "h", labelNames: ["mode", "route_class"] as const };
  const bound = new BoundHistogram({ ...definition, buckets: BUCKETS, registers: [ours] });
  const plain = new Histogram({ ...definition, buckets: BUCKETS, registers: [theirs] });
  const counter = { name: "r_total", help: "c", labelNames: ["mode", "status"] as const };
  const boundCounter = new BoundCounter({ ...counter, registers: [ours] });
  const plainCounter = new Counter({ ...counter, registers: [theirs] });
  for (const [mode, route, value] of OBSERVED) {
    bound.labels(mode, route).observe(value);
    plain.labels(mode, route).observe(value);
    boundCounter.labels(mode, String(Math.round(value))).inc();
    plainCounter.labels(mode, String(Math.round(value))).inc();
  }
  return { ours, theirs };
}

describe("bound metrics", () => {
  it("expose on /metrics exactly what prom-client's histogram and counter do", async () => {
    const { ours, theirs } = pair();
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('d_seconds_bucket{le="0.01",mode="ingress",route_class="PSP_AI"} 2');
    expect(text).toContain('d_seconds_bucket{le="+Inf",mode="ingress",route_class="PSP_PI"} 3');
  });

  it("aggregate across workers as prom-client's do", async () => {
    const one = pair();
    const two = pair();
    const ours = AggregatorRegistry.aggregate([
      await one.ours.getMetricsAsJSON(),
      await two.ours.getMetricsAsJSON(),
    ] as never);
    const theirs = AggregatorRegistry.aggregate([
      await one.theirs.getMetricsAsJSON(),
      await two.theirs.getMetricsAsJSON(),
    ] as never);
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('d_seconds_count{mode="ingress",route_class="PSP_PI"} 6');
  });

  it("a child is bound once per combination, and the label count is checked", () => {
    const histogram = new BoundHistogram({
      name: "x_seconds",
      help: "h",
      labelNames: ["a", "b"],
      buckets: BUCKETS,
      registers: [],
    });
    expect(histogram.labels("1", "2")).toBe(histogram.labels("1", "2"));
    expect(histogram.labels("1", "2")).not.toBe(histogram.labels("1", "3"));
    expect(() => histogram.labels("1")).toThrow(/takes 2 label values, got 1/);
  });
});
