/**
 * Loading a register of the EBA's size must not stall the event loop: the work runs in a worker
 * and the Map is built in slices. No time bound (the machines are shared: GC pauses and the
 * scheduler alone gave gaps of 20–270 ms under load): the longest gap while loading is held to a
 * fraction of the stall of the same work on the main thread, measured in the same run.
 */

import { monitorEventLoopDelay } from "node:perf_hooks";
import { zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { entriesInSlices, loadRegister } from "../../../src/trust/register-loading.js";
import { largeEbaRegister } from "../../helpers/eba-register-fixture.js";

/** The loaded register's longest gap, as a share of the main thread's own stall over the same JSON. */
const STALL_SHARE = 0.5;

/** How long parsing the JSON on the main thread holds the loop: what the worker saves it. */
function mainThreadStallMs(json: Uint8Array): number {
  const start = performance.now();
  JSON.parse(new TextDecoder().decode(json));
  return performance.now() - start;
}

/** The longest gap between 1 ms ticks while `work` runs, and the event-loop delay histogram's max. */
async function longestStall<T>(
  work: () => Promise<T>,
): Promise<{ result: T; gapMs: number; histogramMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let last = performance.now();
  let gap = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 1);
  try {
    const result = await work();
    return { result, gapMs: gap, histogramMs: histogram.max / 1e6 };
  } finally {
    clearInterval(tick);
    histogram.disable();
  }
}

describe("register loading off the event loop", () => {
  const fixture = largeEbaRegister(50 * 1024 * 1024);

  it.each([
    { name: "EBA JSON, 50 MB", zipped: false },
    { name: "EBA ZIP of 50 MB of JSON", zipped: true },
  ])(
    "$name: complete Map, event loop never stalled long",
    async ({ zipped }) => {
      expect(fixture.json.length).toBeGreaterThan(50 * 1024 * 1024);
      const bytes = zipped ? zipSync({ "register.json": fixture.json }, { level: 1 }) : fixture.json.slice();
      // Let the garbage of making the input go before measuring.
      await new Promise((r) => setTimeout(r, 50));
      const { result, gapMs, histogramMs } = await longestStall(() => loadRegister(bytes, { source: "eba" }));
      expect(result.threaded).toBe(true);
      expect(result.zipped).toBe(zipped);
      expect(result.entries.size).toBe(fixture.tpps);
      expect(result.entries.get(fixture.sample)).toMatchObject({ source: "eba", status: "authorised" });
      expect(result.skippedByReason).toMatchObject({
        "not a PSD2 TPP type": fixture.tpps,
        "not an entity": 1,
      });
      // The input was moved to the worker, not copied.
      expect(bytes.byteLength).toBe(0);
      console.log(
        `longest stall ${gapMs.toFixed(1)} ms (histogram ${histogramMs.toFixed(1)} ms), ${result.entries.size} entries`,
      );
      const baselineMs = mainThreadStallMs(fixture.json);
      console.log(`the same JSON parsed on the main thread: ${baselineMs.toFixed(1)} ms`);
      expect(gapMs).toBeLessThan(baselineMs * STALL_SHARE);
    },
    180_000,
  );

  it("builds the Map in slices, yielding between them", async () => {
    const lines = new TextEncoder().encode(
      Array.from({ length: 2500 }, (_, i) =>
        JSON.stringify({ organizationIdentifier: `PSDNO-FSA-${i}` }),
      ).join("\n"),
    );
    // Another task that wants the loop: it gets a turn between slices, not only at the end.
    let turns = 0;
    let running = true;
    const other = () => {
      turns++;
      if (running) setImmediate(other);
    };
    setImmediate(other);
    const entries = await entriesInSlices(lines, 1000);
    running = false;
    expect(entries.size).toBe(2500);
    expect(turns).toBeGreaterThanOrEqual(2);
  });

  it.each([
    {
      name: "not JSON, through the worker",
      bytes: "[ broken",
      format: "eba-json" as const,
      error: "EBA register is not valid JSON",
    },
    {
      name: "our format, broken, inline",
      bytes: "{ broken",
      format: "auto" as const,
      error: "register is not valid JSON",
    },
    {
      name: "an object where the EBA has an array",
      bytes: '{"x":1}',
      format: "eba-json" as const,
      error: "not a JSON array",
    },
    { name: "eba-zip that is not a ZIP", bytes: "[]", format: "eba-zip" as const, error: "not a ZIP" },
  ])("refuses unusable input with a message: $name", async ({ bytes, format, error }) => {
    await expect(
      loadRegister(new TextEncoder().encode(bytes), { format, inlineBelowBytes: 0 }),
    ).rejects.toThrow(error);
    await expect(loadRegister(new TextEncoder().encode(bytes), { format })).rejects.toThrow(error);
  });

  it("refuses a ZIP without JSON and a ZIP entry that inflates beyond the bound", async () => {
    const noJson = zipSync({ "readme.txt": new TextEncoder().encode("hi") });
    await expect(loadRegister(noJson)).rejects.toThrow("holds no .json file");
    const big = zipSync({ "r.json": new Uint8Array(1_000_000).fill(0x20) });
    await expect(loadRegister(big, { maxUncompressedBytes: 1000 })).rejects.toThrow(
      "more than the 1000 allowed",
    );
  });

  it("decodes our own JSON format in the worker too, when told to", async () => {
    const json = JSON.stringify({
      tpps: [{ organizationIdentifier: "PSDNO-FSA-1", name: "One", roles: ["PSP_AI"], status: "authorised" }],
    });
    const loaded = await loadRegister(new TextEncoder().encode(json), {
      inlineBelowBytes: 0,
      source: "overrides",
    });
    expect(loaded).toMatchObject({ threaded: true, kind: "json" });
    expect(loaded.entries.get("PSDNO-FSA-1")).toMatchObject({ name: "One", source: "overrides" });
  });
});
