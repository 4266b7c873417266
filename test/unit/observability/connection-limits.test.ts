/**
 * A listener limit that bites is counted per limit and logged at warn, at most one line per limit
 * every 10 s (a flood of idle connections must not flood the log), the next line saying how many
 * it did not log; keep-alive connections timing out is routine and logged at debug.
 */

import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ConnectionLimitMetrics, WARN_INTERVAL_MS } from "../../../src/observability/connection-limits.js";
import { createLogger } from "../../../src/observability/logger.js";
import { Scrape } from "../../helpers/prometheus-text.js";

function setUp() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  let t = 1_000_000;
  const registry = new Registry();
  const metrics = new ConnectionLimitMetrics(registry, "psd2_gateway_");
  metrics.countOpen(() => 7);
  const observe = metrics.observer(createLogger("debug", { destination }), () => t);
  return { lines, observe, registry, advance: (ms: number) => (t += ms) };
}

describe("connectionLimitMetrics", () => {
  it("counts every bite by limit, with every limit's series present from the start", async () => {
    const { observe, registry } = setUp();
    let scrape = new Scrape(await registry.metrics());
    expect(scrape.only("psd2_gateway_connection_limit_total", { limit: "idle-timeout" })).toBe(0);
    expect(scrape.only("psd2_gateway_connections_open")).toBe(7);
    observe("idle-timeout", "192.0.2.1");
    observe("idle-timeout", "192.0.2.2");
    observe("max-connections-per-address", "192.0.2.1");
    scrape = new Scrape(await registry.metrics());
    expect(scrape.only("psd2_gateway_connection_limit_total", { limit: "idle-timeout" })).toBe(2);
    expect(scrape.only("psd2_gateway_connection_limit_total", { limit: "max-connections-per-address" })).toBe(
      1,
    );
  });

  it("warns once per limit per interval, and the next line says how many went unlogged", async () => {
    const { observe, lines, advance } = setUp();
    for (let i = 0; i < 1000; i++) observe("idle-timeout", "192.0.2.1");
    observe("headers-timeout", "192.0.2.9");
    const warned = () => lines.filter((l) => l.level === 40);
    expect(warned().map((l) => l.limit)).toEqual(["idle-timeout", "headers-timeout"]);
    expect(warned()[0]!.msg).toContain("listen.idleTimeoutSeconds");
    advance(WARN_INTERVAL_MS);
    observe("idle-timeout", "192.0.2.3");
    expect(warned()).toHaveLength(3);
    expect(warned()[2]).toMatchObject({
      limit: "idle-timeout",
      address: "192.0.2.3",
      unloggedSinceLastLine: 999,
    });
  });

  it("logs keep-alive timeouts at debug only", () => {
    const { observe, lines } = setUp();
    observe("keep-alive-timeout", "192.0.2.1");
    expect(lines.map((l) => l.level)).toEqual([20]);
  });
});
