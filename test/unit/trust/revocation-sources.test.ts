/**
 * Where a certificate says its revocation status is: AIA (OCSP, caIssuers) and CDP URLs, read from
 * a real certificate generated with @peculiar/x509 and from extension values written with
 * @peculiar/asn1-x509 for the awkward cases. The extensions are attacker input: whatever they
 * hold, revocationSourcesOf returns lists and never throws.
 */

import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { AsnConvert } from "@peculiar/asn1-schema";
import {
  AccessDescription,
  AttributeTypeAndValue,
  AttributeValue,
  AuthorityInfoAccessSyntax,
  CRLDistributionPoints,
  DistributionPoint,
  DistributionPointName,
  GeneralName,
  id_ad_caIssuers,
  id_ad_ocsp,
  RelativeDistinguishedName,
} from "@peculiar/asn1-x509";
import * as x509 from "@peculiar/x509";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type Extension, type ParsedCertificate, parseCertificate } from "../../../src/eidas/index.js";
import { isRejection } from "../../../src/errors.js";
import {
  MAX_URL_LENGTH,
  MAX_URLS_PER_KIND,
  type RevocationSources,
  revocationSourcesOf,
} from "../../../src/trust/revocation-sources.js";
import { encodeTlvTree, mutateTree, mutationsArbitrary, parseTlv } from "../../helpers/der-mutation.js";
import { named } from "../../helpers/named-rows.js";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const AIA = "1.3.6.1.5.5.7.1.1";
const CDP = "2.5.29.31";
const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

let certificate: ParsedCertificate;

beforeAll(async () => {
  const keys = (await webcrypto.subtle.generateKey(EC, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const generated = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "0a0b0c",
    name: "C=NO, O=Demo TPP, CN=Demo TPP QSealC",
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: EC,
    keys: keys as never,
    extensions: [
      new x509.AuthorityInfoAccessExtension({
        ocsp: ["http://ocsp.qtsp.example/ocsp", "ldap://ldap.qtsp.example/cn=ocsp"],
        caIssuers: ["https://qtsp.example/issuing-ca.crt"],
      }),
      new x509.CRLDistributionPointsExtension([
        "http://crl.qtsp.example/issuing-ca.crl",
        "ldap://ldap.qtsp.example/cn=Issuing%20CA?certificateRevocationList",
      ]),
    ],
  });
  const parsed = parseCertificate(new Uint8Array(generated.rawData));
  if (isRejection(parsed)) throw new Error(parsed.text);
  certificate = parsed;
});

const uri = (uniformResourceIdentifier: string) => new GeneralName({ uniformResourceIdentifier });

function aia(entries: readonly (readonly [method: string, name: GeneralName])[]): Extension {
  const value = new AuthorityInfoAccessSyntax(
    entries.map(([accessMethod, accessLocation]) => new AccessDescription({ accessMethod, accessLocation })),
  );
  return { oid: AIA, critical: false, value: new Uint8Array(AsnConvert.serialize(value)) };
}

function cdp(points: readonly DistributionPoint[]): Extension {
  return {
    oid: CDP,
    critical: false,
    value: new Uint8Array(AsnConvert.serialize(new CRLDistributionPoints([...points]))),
  };
}

const fullName = (...urls: string[]) =>
  new DistributionPoint({ distributionPoint: new DistributionPointName({ fullName: urls.map(uri) }) });

const withExtensions = (extensions: readonly Extension[]): ParsedCertificate => ({
  ...certificate,
  extensions,
});

interface Row {
  readonly name: string;
  readonly extensions: () => readonly Extension[];
  readonly sources: RevocationSources;
}

const NONE: RevocationSources = { ocsp: [], crl: [], caIssuers: [] };
const many = (n: number) => Array.from({ length: n }, (_, i) => `http://ocsp${i}.qtsp.example/`);

const ROWS: readonly Row[] = [
  {
    name: "the generated certificate's AIA and CDP, ldap left out",
    extensions: () => certificate.extensions,
    sources: {
      ocsp: ["http://ocsp.qtsp.example/ocsp"],
      crl: ["http://crl.qtsp.example/issuing-ca.crl"],
      caIssuers: ["https://qtsp.example/issuing-ca.crt"],
    },
  },
  { name: "no extensions", extensions: () => [], sources: NONE },
  {
    name: "only ldap, ftp and file URLs",
    extensions: () => [
      aia([
        [id_ad_ocsp, uri("ldap://ocsp.example/")],
        [id_ad_caIssuers, uri("ftp://ca.example/ca.crt")],
      ]),
      cdp([fullName("file:///etc/ca.crl", "ldap://crl.example/")]),
    ],
    sources: NONE,
  },
  {
    name: "names that are not URIs",
    extensions: () => [
      aia([[id_ad_ocsp, new GeneralName({ dNSName: "ocsp.example" })]]),
      cdp([fullName(), new DistributionPoint({ cRLIssuer: [uri("http://issuer.example/")] })]),
    ],
    sources: NONE,
  },
  {
    name: "a distribution point named relative to the CRL issuer",
    extensions: () => [
      cdp([
        new DistributionPoint({
          distributionPoint: new DistributionPointName({
            nameRelativeToCRLIssuer: new RelativeDistinguishedName([
              new AttributeTypeAndValue({
                type: "2.5.4.3",
                value: new AttributeValue({ printableString: "CRL1" }),
              }),
            ]),
          }),
        }),
        fullName("https://crl.example/2.crl"),
      ]),
    ],
    sources: { ...NONE, crl: ["https://crl.example/2.crl"] },
  },
  {
    name: "an access method other than OCSP and caIssuers",
    extensions: () => [aia([["1.3.6.1.5.5.7.48.3", uri("http://tsa.example/")]])],
    sources: NONE,
  },
  {
    name: `more than ${MAX_URLS_PER_KIND} URLs of a kind`,
    extensions: () => [
      aia(many(6).map((url) => [id_ad_ocsp, uri(url)] as const)),
      cdp([fullName(...many(3)), fullName(...many(6))]),
    ],
    sources: { ...NONE, ocsp: many(4), crl: many(4) },
  },
  {
    name: "the same URL twice",
    extensions: () => [
      aia([
        [id_ad_ocsp, uri("http://ocsp.example/")],
        [id_ad_ocsp, uri("http://ocsp.example/")],
      ]),
    ],
    sources: { ...NONE, ocsp: ["http://ocsp.example/"] },
  },
  {
    name: "an overlong URL, one with a space, one with a newline, one that does not parse",
    extensions: () => [
      aia([
        [id_ad_ocsp, uri(`http://ocsp.example/${"a".repeat(MAX_URL_LENGTH)}`)],
        [id_ad_ocsp, uri("http://ocsp.example/a b")],
        [id_ad_ocsp, uri("http://ocsp.example/\nX-Injected: 1")],
        [id_ad_ocsp, uri("http://[::1/")],
        [id_ad_ocsp, uri("HTTPS://OCSP.example/ok")],
      ]),
    ],
    sources: { ...NONE, ocsp: ["HTTPS://OCSP.example/ok"] },
  },
  {
    name: "a malformed AIA leaves the CDP readable",
    extensions: () => [
      { oid: AIA, critical: false, value: Uint8Array.of(0x30, 0x05, 0x30, 0x03, 0x06, 0x01) },
      cdp([fullName("http://crl.example/")]),
    ],
    sources: { ...NONE, crl: ["http://crl.example/"] },
  },
  {
    name: "a CDP that is an OCTET STRING",
    extensions: () => [{ oid: CDP, critical: false, value: Uint8Array.of(0x04, 0x01, 0x00) }],
    sources: NONE,
  },
  {
    name: "an empty extension value",
    extensions: () => [
      { oid: AIA, critical: false, value: new Uint8Array(0) },
      { oid: CDP, critical: false, value: new Uint8Array(0) },
    ],
    sources: NONE,
  },
];

describe("revocationSourcesOf", () => {
  it.each(named(ROWS))("%s", (_name, row) => {
    expect(revocationSourcesOf(withExtensions(row.extensions()))).toEqual(row.sources);
  });
});

describe("revocationSourcesOf on hostile extensions", () => {
  const expectLists = (sources: RevocationSources) => {
    for (const list of [sources.ocsp, sources.crl, sources.caIssuers]) {
      expect(list.length).toBeLessThanOrEqual(MAX_URLS_PER_KIND);
      for (const url of list) expect(url).toMatch(/^https?:\/\/[\x21-\x7e]+$/i);
    }
  };

  it("never throws on arbitrary extension values", () => {
    fc.assert(
      fc.property(fc.constantFrom(AIA, CDP), fc.uint8Array({ maxLength: 128 }), (oid, value) =>
        expectLists(revocationSourcesOf(withExtensions([{ oid, critical: false, value }]))),
      ),
      { numRuns: 500 },
    );
  });

  it("never throws on mutated AIA and CDP values", () => {
    const originals = certificate.extensions.filter((e) => e.oid === AIA || e.oid === CDP);
    expect(originals).toHaveLength(2);
    const trees = originals.map((e) => ({ oid: e.oid, tree: parseTlv(e.value) }));
    fc.assert(
      fc.property(fc.nat({ max: trees.length - 1 }), mutationsArbitrary(4), (which, mutations) => {
        const { oid, tree } = trees[which]!;
        const value = encodeTlvTree(mutateTree(tree, mutations));
        expectLists(revocationSourcesOf(withExtensions([{ oid, critical: false, value }])));
      }),
      { numRuns: 800 },
    );
  });
});
