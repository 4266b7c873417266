/**
 * TrustPool: what the trust sources contribute (a folder's CAs and CRLs, a trusted list's
 * anchors) put together into the one trust store the verifier reads. Real certificates from the
 * dev PKI; the CRLs are plain lists (their signatures are checked where they are read, not here).
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CrlRevocationChecker,
  type ParsedCertificate,
  parseCertificate,
  type QualifiedAnchor,
  type RevocationList,
  TrustStore,
} from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import { TrustPool } from "../../../src/trust/pool.js";

let pki: DevPki;
let root: ParsedCertificate;
let issuingCa: ParsedCertificate;

beforeAll(async () => {
  pki = await generateDevPki(mkdtempSync(join(tmpdir(), "psd2-pool-")));
  root = parsed(pki.root.der);
  issuingCa = parsed(pki.issuingCa.der);
});

function parsed(der: Uint8Array): ParsedCertificate {
  const certificate = parseCertificate(der);
  if (isRejection(certificate)) throw new Error(certificate.text);
  return certificate;
}

function anchor(certificate: ParsedCertificate): QualifiedAnchor {
  return {
    certificate,
    qualifiedFor: { qwac: true, qseal: true },
    grantedAt: () => true,
    source: "XX trusted list: Demo QTSP / Demo CA/QC",
  };
}

function list(issuer: ParsedCertificate, thisUpdate: string, source: string): RevocationList {
  return {
    issuerDer: issuer.subjectDer,
    thisUpdate: new Date(thisUpdate),
    nextUpdate: undefined,
    revoked: new Map(),
    source,
  };
}

describe("TrustPool", () => {
  it("uses a folder's store as it is while it is the only contribution", () => {
    const pool = new TrustPool();
    const folder = new TrustStore([root, issuingCa]);
    pool.put("folder", { cas: folder });
    expect(pool.trustStore).toBe(folder);
    expect(pool.cas()).toEqual(folder.all);
  });

  it("puts a trusted list's anchors beside the folder's CAs, and tells of every change", () => {
    let changes = 0;
    const pool = new TrustPool(() => changes++);
    pool.put("folder", { cas: new TrustStore([root]) });
    pool.put("lotl", { anchors: [anchor(issuingCa)] });
    expect(changes).toBe(2);
    expect(pool.trustStore.size).toBe(1);
    expect(pool.trustStore.anchorCount).toBe(1);
    expect(pool.cas().map((c) => c.subjectRfc2253)).toEqual([root.subjectRfc2253, issuingCa.subjectRfc2253]);

    // A source's new copy replaces its old one: the list now names no CA.
    pool.put("lotl", { anchors: [] });
    expect(changes).toBe(3);
    expect(pool.trustStore.anchorCount).toBe(0);
    expect(pool.trustStore.size).toBe(1);
  });

  it("answers for an issuer with the newest CRL any source holds", () => {
    const pool = new TrustPool();
    const older = list(issuingCa, "2026-01-01T00:00:00Z", "a.crl");
    const newer = list(issuingCa, "2026-02-01T00:00:00Z", "b.crl");
    pool.put("a", { crls: new CrlRevocationChecker([older]) });
    pool.put("b", { crls: new CrlRevocationChecker([newer]) });
    expect(pool.localList(issuingCa)?.source).toBe("b.crl");
    expect(pool.localList(root)).toBeUndefined();
  });
});
