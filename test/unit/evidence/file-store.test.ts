/**
 * The evidence folder (src/evidence/file-store.ts) read back and checked (verify.ts): records,
 * rotation and checkpoints, the bounded queue, a failing disk; and what `evidence verify` names
 * when a line is altered, removed or reordered.
 */

import { createHash, X509Certificate } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  FileEvidenceStore,
  type FileStoreOptions,
  readEvidenceFolder,
} from "../../../src/evidence/file-store.js";
import type { ResponseEvidence } from "../../../src/evidence/record.js";
import { checkpointKeys, verifyChain } from "../../../src/evidence/verify.js";
import { offerOneByOne, request } from "./evidence-fixtures.js";

const folders: string[] = [];
afterEach(() => {
  for (const f of folders.splice(0)) {
    chmodSync(f, 0o755);
    rmSync(f, { recursive: true, force: true });
  }
});

function folder(): string {
  const f = mkdtempSync(join(tmpdir(), "evidence-"));
  folders.push(f);
  return f;
}

function open(options: Partial<FileStoreOptions> & { folder: string }) {
  return FileEvidenceStore.open({
    instanceId: "gw-1",
    fsync: "interval",
    rotateBytes: 1024 * 1024,
    rotateSeconds: 3600,
    retainDays: 0,
    queueLength: 100,
    checkpointSeconds: 60,
    ...options,
  });
}

function verified(dir: string) {
  const read = readEvidenceFolder(dir);
  const keyOf = checkpointKeys((id) => read.publicKeyPem(id));
  return read.chains.map((chain) => verifyChain(chain, keyOf));
}

async function storeWith(dir: string, ids: readonly string[], options: Partial<FileStoreOptions> = {}) {
  const store = await open({ folder: dir, ...options });
  await offerOneByOne(store, ids);
  await store.close();
  return store;
}

const chainFile = (dir: string, n = 1) => join(dir, "chains", "gw-1", `${String(n).padStart(6, "0")}.jsonl`);

describe("the file store", () => {
  it("writes each record once, a checkpoint at close, and its own key beside: verify passes", async () => {
    const dir = folder();
    await storeWith(dir, ["a", "b", "c"]);
    const lines = readFileSync(chainFile(dir), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.type)).toEqual(["file", "request", "request", "request", "checkpoint"]);
    expect(lines.filter((l) => l.type === "request").map((l) => l.requestId)).toEqual(["a", "b", "c"]);
    expect(readdirSync(dir).sort()).toEqual(
      ["certificates", "chains", "checkpoint-key.pem", "checkpoint-public.pem", "keys", "reports"].sort(),
    );
    const [report] = verified(dir);
    expect(report).toMatchObject({ records: 3, checkpoints: 1, uncovered: 0, endsWithCheckpoint: true });
    expect(report!.problem).toBeUndefined();
  });

  it("rotates by size: each file ends with a checkpoint and the next one carries on the chain", async () => {
    const dir = folder();
    await storeWith(
      dir,
      Array.from({ length: 20 }, (_, i) => `r${i}`),
      { rotateBytes: 2000 },
    );
    const files = readdirSync(join(dir, "chains", "gw-1"));
    expect(files.length).toBeGreaterThan(1);
    const [report] = verified(dir);
    expect(report).toMatchObject({ records: 20, files: files.length, endsWithCheckpoint: true });
    expect(report!.problem).toBeUndefined();
  });

  it("retention: a start deletes the files last written before retainDays, never the file being written", async () => {
    const dir = folder();
    await storeWith(
      dir,
      Array.from({ length: 20 }, (_, i) => `r${i}`),
      { rotateBytes: 2000 },
    );
    const files = readdirSync(join(dir, "chains", "gw-1")).sort();
    expect(files.length).toBeGreaterThan(2);
    // The second file last written after the cutoff: it stays.
    const later = (Date.now() + 5 * 86_400_000) / 1000;
    utimesSync(join(dir, "chains", "gw-1", files[1]!), later, later);
    // The sweeping gateway's clock 3 days ahead, retainDays 1: the cutoff is 2 days from now, after
    // every file but that one, its own current file's included.
    const store = await open({
      folder: dir,
      instanceId: "gw-2",
      retainDays: 1,
      now: () => Date.now() + 3 * 86_400_000,
    });
    for (let i = 0; i < 250 && existsSync(join(dir, "chains", "gw-1", files[0]!)); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(readdirSync(join(dir, "chains", "gw-1"))).toEqual([files[1]]);
    expect(readdirSync(join(dir, "chains", "gw-2"))).toEqual(["000001.jsonl"]);
    await store.close();
  });

  it("a rotation due at close ends the chain with its checkpoint, not with a next file's first line", async () => {
    const dir = folder();
    // Every batch passes rotateBytes, so a rotation is due when close() writes the last checkpoint.
    await storeWith(dir, ["a", "b"], { rotateBytes: 1 });
    const files = readdirSync(join(dir, "chains", "gw-1")).sort();
    const last = readFileSync(join(dir, "chains", "gw-1", files.at(-1)!), "utf8")
      .trimEnd()
      .split("\n");
    expect(JSON.parse(last.at(-1)!).type).toBe("checkpoint");
    const [report] = verified(dir);
    expect(report).toMatchObject({ records: 2, endsWithCheckpoint: true });
    expect(report!.problem).toBeUndefined();
  });

  it("keeps the same folder key across starts; each start is a chain of its own", async () => {
    const dir = folder();
    await storeWith(dir, ["a"]);
    const key = readFileSync(join(dir, "checkpoint-key.pem"), "utf8");
    await storeWith(dir, ["b"], { instanceId: "gw-2" });
    expect(readFileSync(join(dir, "checkpoint-key.pem"), "utf8")).toBe(key);
    expect(verified(dir).map((r) => [r.chain, r.records, r.problem])).toEqual([
      ["gw-1", 1, undefined],
      ["gw-2", 1, undefined],
    ]);
  });

  it("refuses a record when the queue is full; under continue it is dropped and the chain says so", async () => {
    const dir = folder();
    const store = await open({ folder: dir, queueLength: 2 });
    // Offered in one go: the writer has not run yet.
    expect(store.offer(request("a"), true)).toBe(true);
    expect(store.offer(request("b"), true)).toBe(true);
    expect(store.offer(request("c"), true)).toBe(false);
    expect(store.offer(request("d"), false)).toBe(false);
    await store.close();
    const [report] = verified(dir);
    expect(report).toMatchObject({ records: 2, dropped: 1 });
    expect(report!.problem).toBeUndefined();
  });

  it("a short write goes on from the bytes of the rest: the chain is whole", async () => {
    const dir = folder();
    const store = await open({ folder: dir });
    // @ts-expect-error the test reaches in: the next gathered write writes only half its bytes
    const handle = store.handle as Record<
      "write" | "writev",
      (...args: unknown[]) => Promise<{ bytesWritten: number }>
    >;
    const writev = handle.writev.bind(handle);
    let short = 0;
    handle.writev = (parts, position) => {
      short += 1;
      const all = Buffer.concat(parts as Buffer[]);
      return handle.write(all, 0, Math.floor(all.length / 2), position);
    };
    for (const id of ["a", "b", "c"]) expect(store.offer(request(id), true)).toBe(true);
    await store.close();
    handle.writev = writev;
    expect(short).toBeGreaterThan(0);
    const lines = readFileSync(chainFile(dir), "utf8");
    for (const id of ["a", "b", "c"]) expect(lines).toContain(`"requestId":"${id}"`);
    expect(verified(dir)[0]!.problem).toBeUndefined();
  });

  it("a failing disk: records are refused while it fails (mustKeep), none acknowledged is lost", async () => {
    const dir = folder();
    const failures: string[] = [];
    const store = await open({ folder: dir, events: { failed: (reason) => failures.push(reason) } });
    expect(store.offer(request("kept"), true)).toBe(true);
    // @ts-expect-error the test reaches in: the next writes fail as on a full disk
    const handle = store.handle as Record<"write" | "writev", (...args: unknown[]) => Promise<unknown>>;
    const write = handle.write.bind(handle);
    const writev = handle.writev.bind(handle);
    handle.write = handle.writev = () =>
      Promise.reject(Object.assign(new Error("no space left"), { code: "ENOSPC" }));
    for (let i = 0; i < 100 && !store.status().failing; i++) await new Promise((r) => setTimeout(r, 10));
    expect(store.status().failing?.reason).toBe("disk-full");
    expect(store.offer(request("refused"), true)).toBe(false);
    expect(failures).toContain("disk-full");
    expect(failures).toContain("store-failing");
    handle.write = write;
    handle.writev = writev;
    await store.close();
    const lines = readFileSync(chainFile(dir), "utf8");
    expect(lines).toContain('"requestId":"kept"');
    expect(lines).not.toContain('"requestId":"refused"');
    expect(verified(dir)[0]!.problem).toBeUndefined();
  });
});

describe("a next file that cannot be made at rotation (the folder turned read-only)", () => {
  it("refuses while it fails; once it can, the new file starts with its file line and nothing acknowledged is lost", async () => {
    const dir = folder();
    const store = await open({ folder: dir, rotateBytes: 400 });
    // @ts-expect-error the test reaches in: the next file cannot be opened, once
    const openSegment = store.openSegment.bind(store);
    let fail = true;
    // @ts-expect-error as above
    store.openSegment = (n: number) =>
      fail
        ? Promise.reject(Object.assign(new Error("read-only file system"), { code: "EROFS" }))
        : openSegment(n);
    expect(store.offer(request("a"), true)).toBe(true);
    for (let i = 0; i < 50 && !store.status().failing; i++) await new Promise((r) => setTimeout(r, 10));
    expect(store.status().failing?.reason).toBe("read-only");
    expect(store.offer(request("refused"), true)).toBe(false);
    fail = false;
    expect(store.offer(request("b"), true)).toBe(false); // still failing until a retry works
    for (let i = 0; i < 300 && store.status().failing; i++) await new Promise((r) => setTimeout(r, 10));
    expect(store.offer(request("c"), true)).toBe(true);
    await store.close();
    const second = readFileSync(chainFile(dir, 2), "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(second[0].type).toBe("file");
    const [report] = verified(dir);
    expect(report!.problem).toBeUndefined();
    expect(report!.records).toBe(2);
  });
});

describe("evidence verify names what was changed", () => {
  async function tampered(change: (lines: string[]) => string[]) {
    const dir = folder();
    await storeWith(dir, ["a", "b", "c", "d"]);
    const path = chainFile(dir);
    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    writeFileSync(path, `${change(lines).join("\n")}\n`);
    const [report] = verified(dir);
    return report!.problem!;
  }

  it("an altered record: the one whose hash the next line no longer holds", async () => {
    // lines: file, a, b, c, d, checkpoint
    const problem = await tampered((l) => l.map((x) => x.replace('"method":"POST"', '"method":"PUT"')));
    expect(problem).toMatchObject({ kind: "altered", requestId: "a", seq: 1 });
    expect(problem.text).toContain("000001.jsonl:2");
  });

  it("the last record altered: the checkpoint no longer matches it", async () => {
    const problem = await tampered((l) => {
      l[4] = l[4]!.replace('"method":"POST"', '"method":"GET"');
      return l;
    });
    expect(problem).toMatchObject({ kind: "altered", requestId: "d" });
  });

  it("a record removed", async () => {
    const problem = await tampered((l) => l.filter((_, i) => i !== 2));
    expect(problem).toMatchObject({ kind: "removed", seq: 2 });
    expect(problem.text).toContain("seq 2 removed");
  });

  it("two records swapped", async () => {
    const problem = await tampered((l) => [l[0]!, l[1]!, l[3]!, l[2]!, l[4]!, l[5]!]);
    expect(problem.kind).toBe("reordered");
    expect(problem.text).toContain("out of order");
  });

  it("a checkpoint's count changed", async () => {
    const problem = await tampered((l) => {
      l[5] = l[5]!.replace('"count":4', '"count":5');
      return l;
    });
    expect(problem.kind).toBe("checkpoint");
  });

  it("the records after the last checkpoint dropped with it: the chain ends uncovered", async () => {
    const dir = folder();
    await storeWith(dir, ["a", "b"]);
    const path = chainFile(dir);
    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    writeFileSync(path, `${lines.slice(0, -1).join("\n")}\n`);
    const [report] = verified(dir);
    expect(report).toMatchObject({ uncovered: 2, endsWithCheckpoint: false });
  });
});

describe("response records and validation reports", () => {
  const response = (requestId: string): ResponseEvidence => ({
    type: "response",
    time: "2026-01-01T00:00:01.000Z",
    requestId,
    method: "POST",
    target: "/v1/payments/sepa-credit-transfers",
    status: 201,
    verdict: "signed",
    dialect: "cavage",
    certificate: "cd".repeat(32),
    signatureHeaders: { signature: 'keyId="k",algorithm="rsa-sha256",headers="digest",signature="AA=="' },
    bodyDigest: "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",
  });

  it("are chained with the requests and counted by the checkpoint; an altered one is named", async () => {
    const dir = folder();
    const store = await open({ folder: dir });
    expect(store.offer(request("a"), true)).toBe(true);
    expect(store.offerResponse(response("a"))).toBe(true);
    await store.close();
    const lines = readFileSync(chainFile(dir), "utf8").trimEnd().split("\n");
    expect(lines.map((l) => JSON.parse(l).type)).toEqual(["file", "request", "response", "checkpoint"]);
    expect(JSON.parse(lines[3]!).count).toBe(2);
    expect(verified(dir)[0]).toMatchObject({ records: 2, problem: undefined });
    writeFileSync(
      chainFile(dir),
      `${lines.map((l) => l.replace('"status":201', '"status":200')).join("\n")}\n`,
    );
    expect(verified(dir)[0]!.problem).toMatchObject({ kind: "altered", requestId: "a", seq: 2 });
  });

  it("a response not queued is never refused: counted as dropped, and the chain says so", async () => {
    const dir = folder();
    const store = await open({ folder: dir, queueLength: 1 });
    expect(store.offer(request("a"), true)).toBe(true);
    expect(store.offerResponse(response("a"))).toBe(false);
    expect(store.status().dropped).toBe(1);
    await store.close();
    expect(verified(dir)[0]).toMatchObject({ records: 1, dropped: 1, problem: undefined });
  });

  it("writes the validation report a record names, and the CAs of its path, once each", async () => {
    const dir = folder();
    const pem = readFileSync(
      "test/fixtures/interop/certs/ext-adorsys-fakeca-leading-zero-serial.pem",
      "utf8",
    );
    const ca = Buffer.from(new X509Certificate(pem).raw);
    const asked: string[] = [];
    const store = await open({
      folder: dir,
      validation: (id) => {
        asked.push(id);
        return { report: { id, indication: "TOTAL_PASSED" }, issuers: [ca] };
      },
    });
    expect(store.offer(request("a", { validationReport: "r-1" }), true)).toBe(true);
    expect(store.offer(request("b", { validationReport: "r-1" }), true)).toBe(true);
    await store.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(asked).toEqual(["r-1"]);
    expect(JSON.parse(readFileSync(join(dir, "reports", "r-1.json"), "utf8"))).toEqual({
      id: "r-1",
      indication: "TOTAL_PASSED",
    });
    const read = readEvidenceFolder(dir);
    expect(read.reportJson("r-1")).toContain("TOTAL_PASSED");
    expect(read.certificatePem(createHash("sha256").update(ca).digest("hex"))).toBe(
      new X509Certificate(ca).toString(),
    );
  });
});
