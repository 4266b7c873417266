/**
 * Every trust document is bounded while it is read (issue 37): a body past `maxBytes` (CRL, OCSP
 * answer, trusted list, register) and an answer in a content coding are refused as they arrive, by
 * a real server on loopback that never stops sending (a fetch that buffered first would never end),
 * the bound named in the source's status and counted by its kind's callback, and the copy the
 * source held kept.
 */

import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import {
  buildTrustedLists,
  ebaRegisterDocument,
  ebaRegisterZip,
  generateTrustedListSigner,
} from "@psd2-gateway/dev-pki";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type ParsedCertificate, parseCertificate, TppRegister } from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import { DocumentRefused, type RefusalReason, refusalOf } from "../../../src/trust/bounds.js";
import { CrlCache } from "../../../src/trust/crl-cache.js";
import { fetchDocument } from "../../../src/trust/http-fetch.js";
import { LiveRevocation } from "../../../src/trust/live-revocation.js";
import {
  FileRegisterSource,
  HttpRegisterSource,
  RegisterTrustSource,
} from "../../../src/trust/register-sources.js";
import { TrustedListSet } from "../../../src/trust/trusted-lists.js";
import { issuingCaCrl, type QtspPki, qtspPki } from "../../helpers/test-qtsp.js";
import { handZip, zerosDeflated } from "../../helpers/zip-bomb.js";

const GiB = 1024 * 1024 * 1024;
let server: Server | undefined;
/** What the running server answers: swapped by each test. */
let answer: RequestListener = (_req, res) => void res.writeHead(404).end();

/** Sends 64 KiB chunks for as long as the client reads; never ends on its own. */
const endless =
  (headers: Record<string, string> = {}): RequestListener =>
  (req, res) => {
    req.resume();
    res.writeHead(200, headers);
    const chunk = Buffer.alloc(64 * 1024, 0x30);
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
    };
    res.on("drain", pump);
    pump();
  };

const serve =
  (body: Uint8Array, headers: Record<string, string> = {}): RequestListener =>
  (req, res) => {
    req.resume();
    res.writeHead(200, { "content-length": String(body.length), ...headers }).end(body);
  };

async function listen(port = 0): Promise<string> {
  server = createServer((req, res) => answer(req, res));
  await new Promise<void>((resolve) => server!.listen(port, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** The error `promise` rejects with (it must reject). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    () => new Error("resolved"),
    (error: Error) => error,
  );
  expect(outcome.message).not.toBe("resolved");
  return outcome;
}

describe("fetchDocument", () => {
  it("refuses a body past maxBytes as it arrives, from a server that never stops sending", async () => {
    const url = await listen();
    answer = endless();
    const error = await rejection(fetchDocument(url, { timeoutMs: 5_000, maxBytes: 256 * 1024 }));
    expect(error).toBeInstanceOf(DocumentRefused);
    expect(refusalOf(error)).toBe("size");
    expect(error.message).toBe("more than the 262144 bytes allowed");
  });

  it("refuses a Content-Length past maxBytes before reading the body", async () => {
    const url = await listen();
    // Declares 1 GiB, sends 1 byte and then nothing: a fetch that read on would wait for the rest.
    answer = (_req, res) => {
      res.writeHead(200, { "content-length": String(GiB) });
      res.write("x");
    };
    const error = await rejection(fetchDocument(url, { timeoutMs: 5_000, maxBytes: 1024 }));
    expect(refusalOf(error)).toBe("size");
    expect(error.message).toBe(`${GiB} bytes, more than the 1024 allowed`);
  });

  it("decodes no content coding: a gzip answer (a gzip bomb) is refused, whatever it holds", async () => {
    const url = await listen();
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    answer = serve(bomb, { "content-encoding": "gzip" });
    const error = await rejection(fetchDocument(url, { timeoutMs: 5_000, maxBytes: 20 * 1024 * 1024 }));
    expect(refusalOf(error)).toBe("content-encoding");
    expect(error.message).toBe('answered in Content-Encoding "gzip", not asked for');
    // `identity` is no coding at all.
    answer = serve(Buffer.from("plain"), { "content-encoding": "identity" });
    const plain = await fetchDocument(url, { timeoutMs: 5_000, maxBytes: 1024 });
    expect(plain.status === "fresh" && plain.body.toString()).toBe("plain");
  });
});

describe("CRLs and OCSP answers past their bound", () => {
  let q: QtspPki;
  let issuer: ParsedCertificate;
  let tpp: ParsedCertificate;
  beforeAll(async () => {
    q = await qtspPki();
    const parsed = (der: Uint8Array) => {
      const c = parseCertificate(der);
      if (isRejection(c)) throw new Error(c.text);
      return c;
    };
    issuer = parsed(q.pki.issuingCa.der);
    tpp = parsed(q.pki.tppA.qseal.der);
  }, 60_000);

  it("a CRL: refused while read, the bound in its status, counted, the list held kept", async () => {
    const base = await listen();
    const url = `${base}/ca.crl`;
    answer = serve(await issuingCaCrl(q.pki, {}));
    const refused: RefusalReason[] = [];
    const logs: string[] = [];
    const crls = new CrlCache({
      urls: [url],
      cas: () => [issuer],
      refreshMs: 3_600_000,
      graceMs: 0,
      timeoutMs: 5_000,
      maxBytes: 1024 * 1024,
      maxLists: 4,
      log: (message) => logs.push(message),
      onRefused: (reason) => refused.push(reason),
    });
    await crls.start();
    const held = crls.listAt(url);
    expect(held).toBeDefined();
    answer = endless({ "content-type": "application/pkix-crl" });
    await crls.ensure(url);
    crls.stop();
    expect(refused).toEqual(["size"]);
    expect(crls.status()[0]).toMatchObject({ source: url, lastError: "more than the 1048576 bytes allowed" });
    expect(logs).toEqual([`CRL ${url}: more than the 1048576 bytes allowed; keeping the last good copy`]);
    expect(crls.listAt(url)).toBe(held);
  });

  it("an OCSP answer: refused while read, the bound in the refusal and the responder's status, counted, logged", async () => {
    // The certificate names the responder on q.port: this server stands in for it.
    await listen(q.port);
    answer = endless({ "content-type": "application/ocsp-response" });
    const refused: RefusalReason[] = [];
    const logs: string[] = [];
    const revocation = new LiveRevocation({
      order: "ocsp",
      softFail: false,
      firstAnswerTimeoutMs: 5_000,
      ocsp: { timeoutMs: 5_000, maxAgeMs: 3_600_000, maxEntries: 10 },
      crls: new CrlCache({ cas: () => [], refreshMs: 1, graceMs: 0, timeoutMs: 1, maxBytes: 1, maxLists: 1 }),
      localList: () => undefined,
      graceMs: 0,
      log: (message) => logs.push(message),
      onRefused: (reason) => refused.push(reason),
    });
    const status = await revocation.check(tpp, issuer, new Date());
    expect(status.refusal?.text).toContain(`OCSP ${q.url}/ocsp: more than the 65536 bytes allowed`);
    expect(refused).toEqual(["size"]);
    expect(logs).toEqual([`OCSP ${q.url}/ocsp: more than the 65536 bytes allowed; answer refused`]);
    expect(revocation.status().find((s) => s.kind === "ocsp")?.lastError).toBe(
      "more than the 65536 bytes allowed",
    );
  });
});

describe("a trusted list past its bound", () => {
  it("the LOTL: refused while read, the bound in its status, counted, the copy held (and its anchors) kept", async () => {
    const base = await listen();
    const [lotlSigner, nationalSigner, ca] = await Promise.all([
      generateTrustedListSigner("Bounds LOTL signer"),
      generateTrustedListSigner("Bounds XX signer"),
      generateTrustedListSigner("Bounds CA"),
    ]);
    const now = new Date();
    const { lotlXml, nationalXml } = buildTrustedLists({
      lotlSigner,
      nationalSigner,
      nationalListUrl: `${base}/tl-xx.xml`,
      nextUpdate: new Date(now.getTime() + 30 * 24 * 3600 * 1000),
      issueDate: new Date(now.getTime() - 24 * 3600 * 1000),
      nationalSequenceNumber: 5,
      services: [
        { serviceName: "Bounds CA", certificate: ca.der, qualifiedFor: { qwac: true, qseal: true } },
      ],
    });
    let lotl: RequestListener = serve(Buffer.from(lotlXml));
    answer = (req, res) => (req.url === "/tl-xx.xml" ? serve(Buffer.from(nationalXml)) : lotl)(req, res);
    const refused: RefusalReason[] = [];
    const set = new TrustedListSet({
      lotl: `${base}/lotl.xml`,
      lotlSigners: [lotlSigner.der],
      maxBytes: 1024 * 1024,
      timeoutMs: 5_000,
      onRefused: (reason) => refused.push(reason),
    });
    expect((await set.refresh(now)).anchors).toHaveLength(1);
    lotl = endless({ "content-type": "application/vnd.etsi.tsl+xml" });
    const result = await set.refresh(now);
    expect(refused).toEqual(["size"]);
    expect(result.lists[0]).toMatchObject({
      kind: "lotl",
      ok: false,
      inUse: true,
      error: `${base}/lotl.xml: more than the 1048576 bytes allowed`,
    });
    expect(result.anchors).toHaveLength(1);
  });

  it("a list read from a file larger than the bound: refused as a size", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "psd2-bounds-")), "lotl.xml");
    writeFileSync(file, Buffer.alloc(300 * 1024, 0x20));
    const refused: RefusalReason[] = [];
    const set = new TrustedListSet({
      lotl: file,
      lotlSigners: [],
      maxBytes: 256 * 1024,
      onRefused: (reason) => refused.push(reason),
    });
    expect((await set.refresh()).lists[0]?.error).toBe(`${file}: 307200 bytes, more than the 262144 allowed`);
    expect(refused).toEqual(["size"]);
  });
});

describe("the register over HTTP and from a file", () => {
  const tpp = { organizationId: "PSDFI-FINFSA-1", name: "One Oy", roles: ["PSP_AI" as const] };

  it("a 4 GiB ZIP bomb over loopback: refused, the bound in the layer's status, counted, the old register in force", async () => {
    const url = `${await listen()}/register.zip`;
    answer = serve(ebaRegisterZip(ebaRegisterDocument([tpp])), { "content-type": "application/zip" });
    const register = new TppRegister({ sources: [{ name: "eba", maxAgeMs: 3_600_000 }] });
    const refused: RefusalReason[] = [];
    const logs: string[] = [];
    const source = new HttpRegisterSource(url, register.layer("eba"), 3_600_000, (m) => logs.push(m), {
      onRefused: (reason) => refused.push(reason),
    });
    const trust = new RegisterTrustSource(register, [source]);
    await trust.refresh();
    expect(register.layer("eba").get(tpp.organizationId)).toBeDefined();
    answer = serve(handZip([{ name: "register.json", data: zerosDeflated(4096), declaredSize: 4 * GiB }]), {
      "content-type": "application/zip",
    });
    await trust.refresh();
    const message = `register ZIP refused: register.json declares ${4 * GiB} bytes uncompressed, more than the ${512 * 1024 * 1024} allowed`;
    expect(refused).toEqual(["uncompressed-size"]);
    expect(trust.status()[0]).toMatchObject({ failures: 1, lastError: message, size: 1, stale: false });
    expect(logs.at(-1)).toBe(`register refresh from ${url} failed: ${message}; keeping the last good copy`);
    expect(register.layer("eba").get(tpp.organizationId)).toMatchObject({ name: "One Oy" });
  });

  it("a file past maxBytes: refused as a size, the copy held kept", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "psd2-bounds-")), "register.zip");
    writeFileSync(file, ebaRegisterZip(ebaRegisterDocument([tpp])));
    const register = new TppRegister({ sources: [{ name: "eba", maxAgeMs: 3_600_000 }] });
    const refused: RefusalReason[] = [];
    const source = new FileRegisterSource(file, register.layer("eba"), 3_600_000, () => {}, {
      maxBytes: 64 * 1024,
      onRefused: (reason) => refused.push(reason),
    });
    await source.refresh();
    writeFileSync(file, Buffer.alloc(100 * 1024));
    await source.refresh();
    expect(refused).toEqual(["size"]);
    expect(register.layer("eba").stats.lastError).toBe("102400 bytes, more than the 65536 allowed");
    expect(register.layer("eba").get(tpp.organizationId)).toBeDefined();
  });
});
