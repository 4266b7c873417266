/**
 * A register ZIP is bounded (issue 37): the uncompressed bytes its entries declare together, how
 * many entries it lists and its compression ratio are checked from its central directory before
 * anything is inflated, and an entry that inflates past its declared size is stopped there. The
 * bombs are built by hand (test/helpers/zip-bomb.ts) and really inflate to what they hide: a loader
 * that inflated them would take minutes and gigabytes, which the process's peak RSS would show.
 */

import { deflateRawSync } from "node:zlib";
import { ebaRegisterDocument, ebaRegisterZip } from "@psd2-gateway/dev-pki";
import { strToU8, Zip, ZipDeflate, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { DocumentRefused, refusalOf } from "../../../src/trust/bounds.js";
import { loadRegister } from "../../../src/trust/register-loading.js";
import { decodeRegister } from "../../../src/trust/register-worker.js";
import { DEFAULT_ZIP_BOUNDS, zipEntries } from "../../../src/trust/register-zip.js";
import { handZip, zerosDeflated } from "../../helpers/zip-bomb.js";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const document = ebaRegisterDocument([
  { organizationId: "PSDFI-FINFSA-1", name: "One Oy", roles: ["PSP_AI"] },
]);

/** The process's peak RSS so far, in bytes (resourceUsage gives KiB). */
const peakRss = () => process.resourceUsage().maxRSS * 1024;

/** What loading `bytes` in the worker threw (it must throw). */
async function refusal(bytes: Uint8Array, options: Parameters<typeof loadRegister>[1] = {}): Promise<Error> {
  const outcome = await loadRegister(bytes, options).then(
    () => new Error("loaded"),
    (error: Error) => error,
  );
  expect(outcome.message).not.toBe("loaded");
  return outcome;
}

describe("honest register ZIPs load as before", () => {
  it("the dev register (JSON and sidecar), and a streamed ZIP with data descriptors", async () => {
    expect(decodeRegister(ebaRegisterZip(document)).entries).toHaveLength(1);
    // fflate's streaming Zip writes sizes after the data (flag bit 3), as streaming publishers do.
    const chunks: Uint8Array[] = [];
    const zip = new Zip((error, chunk) => {
      if (error) throw error;
      chunks.push(chunk);
    });
    const entry = new ZipDeflate("register.json", { level: 6 });
    zip.add(entry);
    entry.push(strToU8(JSON.stringify(document)), true);
    zip.end();
    const streamed = new Uint8Array(Buffer.concat(chunks));
    expect(zipEntries(streamed, DEFAULT_ZIP_BOUNDS)).toHaveLength(1);
    expect((await loadRegister(streamed)).entries.size).toBe(1);
  });
});

describe("refused from the central directory, before anything is inflated", () => {
  it("a ZIP64 entry declaring 4 GiB whose 4 MiB of data really inflates to 4 GiB", async () => {
    const bomb = () => handZip([{ name: "register.json", data: zerosDeflated(4096), declaredSize: 4 * GiB }]);
    expect(bomb().length).toBeLessThan(5 * MiB);
    const before = peakRss();
    const inWorker = await refusal(bomb());
    expect(refusalOf(inWorker)).toBe("uncompressed-size");
    expect(inWorker.message).toBe(
      `register ZIP refused: register.json declares ${4 * GiB} bytes uncompressed, more than the ${512 * MiB} allowed`,
    );
    expect(() => decodeRegister(bomb())).toThrow(DocumentRefused);
    // Neither the declared nor the real size was ever allocated: the peak did not follow them.
    expect(peakRss() - before).toBeLessThan(256 * MiB);
  });

  it("entries declaring more than the bound together, each one under it", async () => {
    const part = (name: string) => ({ name, data: zerosDeflated(1), declaredSize: 300 * MiB });
    const error = await refusal(handZip([part("a.json"), part("b.json")]), { maxCompressionRatio: 1e6 });
    expect(refusalOf(error)).toBe("uncompressed-size");
    expect(error.message).toContain(`its entries declare more than ${512 * MiB} bytes uncompressed together`);
  });

  it("more entries than allowed: 17 by default, and 70,000 listed through a ZIP64 end record", async () => {
    const tiny = (i: number) => ({
      name: `f${i}.txt`,
      data: strToU8("x"),
      method: 0 as const,
      declaredSize: 1,
    });
    const seventeen = await refusal(
      handZip([
        { name: "r.json", data: strToU8("[]"), method: 0, declaredSize: 2 },
        ...[...Array(16).keys()].map(tiny),
      ]),
    );
    expect(refusalOf(seventeen)).toBe("entries");
    expect(seventeen.message).toBe("register ZIP refused: it lists 17 entries, more than the 16 allowed");
    const many = await refusal(handZip([...Array(70_000).keys()].map(tiny)));
    expect(refusalOf(many)).toBe("entries");
    expect(many.message).toContain("it lists 70000 entries");
    // The bound is the config's: the dev register's two entries are too many for one.
    expect(refusalOf(await refusal(ebaRegisterZip(document), { maxZipEntries: 1 }))).toBe("entries");
  });

  it("an entry compressed beyond the ratio, declared honestly: 16 MiB of spaces", async () => {
    const spaces = zipSync({ "r.json": new Uint8Array(16 * MiB).fill(0x20) });
    const error = await refusal(spaces);
    expect(refusalOf(error)).toBe("ratio");
    expect(error.message).toMatch(
      /^register ZIP refused: r\.json declares 16777216 bytes from \d+ compressed, a ratio over the 200:1 allowed$/,
    );
    // Under a looser bound it is an ordinary (if useless) file: refused for what it holds, not its size.
    const loose = await refusal(zipSync({ "r.json": new Uint8Array(16 * MiB).fill(0x20) }), {
      maxCompressionRatio: 2000,
    });
    expect(refusalOf(loose)).toBeUndefined();
  });

  it("a ratio over the bound for the whole file, each entry under the 1 MiB where it is asked", async () => {
    const entry = (i: number) => ({
      name: i === 0 ? "r.json" : `part-${i}.bin`,
      data: new Uint8Array(deflateRawSync(Buffer.alloc(1_000_000))),
      declaredSize: 1_000_000,
    });
    const error = await refusal(handZip([...Array(15).keys()].map(entry)));
    expect(refusalOf(error)).toBe("ratio");
    expect(error.message).toMatch(
      /^register ZIP refused: its entries declare 15000000 bytes from a file of \d+, a ratio over the 200:1 allowed$/,
    );
  });

  it("a sidecar over 4 KiB: refused, not skipped unchecked", async () => {
    const json = strToU8(JSON.stringify(document));
    const error = await refusal(
      zipSync({ "r.json": json, "r.json.sha256": new Uint8Array(5000).fill(0x61) }),
    );
    expect(refusalOf(error)).toBe("uncompressed-size");
    expect(error.message).toContain(
      "its sidecar r.json.sha256 declares 5000 bytes, more than the 4096 allowed",
    );
  });
});

describe("refused while inflating, when the declared size lies", () => {
  it("declares 1,000 bytes (no ratio asked under 1 MiB), inflates to 4 GiB: stopped at byte 1,001", async () => {
    const liar = () => handZip([{ name: "register.json", data: zerosDeflated(4096), declaredSize: 1000 }]);
    const before = peakRss();
    const error = await refusal(liar());
    expect(refusalOf(error)).toBe("uncompressed-size");
    expect(error.message).toBe(
      "register ZIP refused: register.json inflates to more than the 1000 bytes it declares",
    );
    expect(() => decodeRegister(liar())).toThrow("inflates to more than the 1000 bytes it declares");
    expect(peakRss() - before).toBeLessThan(256 * MiB);
  });

  it("declares 64 MiB (a ratio of 16:1, within bounds), inflates to 4 GiB: stopped past 64 MiB", async () => {
    const liar = handZip([{ name: "register.json", data: zerosDeflated(4096), declaredSize: 64 * MiB }]);
    const before = peakRss();
    const error = await refusal(liar);
    expect(refusalOf(error)).toBe("uncompressed-size");
    expect(error.message).toContain(`inflates to more than the ${64 * MiB} bytes it declares`);
    expect(peakRss() - before).toBeLessThan(512 * MiB);
  });

  it("declares more than it inflates to: unreadable, not a bound", () => {
    const short = handZip([
      { name: "r.json", data: new Uint8Array(deflateRawSync(strToU8("[]"))), declaredSize: 10 },
    ]);
    let thrown: unknown;
    try {
      decodeRegister(short);
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).message).toBe(
      "register ZIP is unreadable: r.json inflates to 2 bytes, it declares 10",
    );
    expect(refusalOf(thrown)).toBeUndefined();
  });

  it("a local header that disagrees with the central directory: unreadable", () => {
    const json = strToU8(JSON.stringify(document));
    const zip = handZip([
      {
        name: "r.json",
        data: new Uint8Array(deflateRawSync(json)),
        declaredSize: json.length,
        localDeclaredSize: 7,
      },
    ]);
    expect(() => decodeRegister(zip)).toThrow(
      "its local header and the central directory declare different sizes",
    );
  });
});
