/**
 * A dispute bundle: one record and everything needed to check it without the gateway, with
 * `openssl` alone. Pure: it returns the files; the CLI writes them.
 *
 *     record.json            the record's line, exactly as in the chain
 *     certificate.pem        the TPP's signing certificate; tpp-public.pem its public key
 *     intermediates.pem      the CAs between it and the trust anchor, trust-anchor.pem the anchor
 *     validation-report.json the report the verdict rests on (ETSI TS 119 102-2 terms)
 *     signed-bytes.bin       the exact bytes the TPP signed; signature.bin its signature
 *                            (ECDSA converted from JWS / RFC 9421 r||s to DER, as openssl reads it)
 *     body.bin               the body, when the record kept it
 *     chain/0001.json …      the chain's lines from the record to the checkpoint covering it, each
 *                            without its newline: each line's `prev` is the SHA-256 of the one before
 *     checkpoint.txt         the statement the checkpoint signs; checkpoint.sig its signature;
 *     checkpoint-public.pem  the gateway's checkpoint key (checkpoint-certificate.pem: its QSealC)
 *     response.json          the response the gateway signed for this request, when there is one;
 *                            response-signed-bytes.bin, response-signature.bin, bank-public.pem and
 *                            bank-certificate.pem to check it (draft-cavage)
 *     README.txt             how to check all of it
 *
 * A response record's bundle (responseBundle: a bank's answer egress checked) holds record.json,
 * certificate.pem (the bank's QSealC) and bank-public.pem, bank-chain.pem (the CAs its JWS carried in
 * x5c, when it did), signed-bytes.bin and signature.bin, body.bin when kept, the chain files and
 * checkpoint as above, and its README.txt.
 */

import { X509Certificate } from "node:crypto";
import { isRejection } from "../errors.js";
import { parseSignatureHeader } from "../signature/index.js";
import { readDetachedJws } from "../signature/jws/index.js";
import { type CheckpointLine, checkpointStatement, type RecordLine, type ResponseLine } from "./record.js";
import { type ChainFolder, chainLines, type ParsedLine } from "./verify.js";

export interface BundleSources {
  readonly chains: readonly ChainFolder[];
  publicKeyPem(id: string): string | undefined;
  keyCertificatePem(id: string): string | undefined;
  certificatePem(fingerprint: string): string | undefined;
  reportJson(id: string): string | undefined;
}

export interface FoundRecord {
  readonly chain: ChainFolder;
  readonly at: ParsedLine;
  readonly record: RecordLine;
}

/** Every record with this X-Request-ID, in chain order. */
export function findRecords(chains: readonly ChainFolder[], requestId: string): FoundRecord[] {
  const found: FoundRecord[] = [];
  for (const chain of chains)
    for (const at of chainLines(chain))
      if (at.line.type === "request" && at.line.requestId === requestId)
        found.push({ chain, at, record: at.line });
  return found;
}

/** Every response record with this X-Request-ID, in chain order. */
export function findResponses(
  chains: readonly ChainFolder[],
  requestId: string,
): { readonly chain: ChainFolder; readonly at: ParsedLine; readonly response: ResponseLine }[] {
  const found = [];
  for (const chain of chains)
    for (const at of chainLines(chain))
      if (at.line.type === "response" && at.line.requestId === requestId)
        found.push({ chain, at, response: at.line });
  return found;
}

/** How openssl checks a signature made with `signedWith` by a key of `keyType`. */
export interface OpensslCheck {
  /** The command line, from the bundle's folder. */
  readonly command: readonly string[];
  /** The signature is ECDSA as r||s and is written DER-encoded. */
  readonly derFromRaw: boolean;
}

export function opensslCheck(signedWith: string, keyType: string): OpensslCheck {
  const [dialect, alg] = signedWith.includes(":") ? signedWith.split(":", 2) : ["cavage", signedWith];
  const name = (alg ?? "").toLowerCase();
  if (keyType === "ed25519" || name === "ed25519" || name === "eddsa") {
    return {
      command: [
        "openssl",
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        "tpp-public.pem",
        "-rawin",
        "-in",
        "signed-bytes.bin",
        "-sigfile",
        "signature.bin",
      ],
      derFromRaw: false,
    };
  }
  const hash = /512/.test(name) ? "sha512" : /384/.test(name) ? "sha384" : "sha256";
  const digest = dialect === "cavage" && name === "hs2019" ? "sha512" : hash;
  const pss =
    keyType === "rsa-pss" ||
    (keyType === "rsa" && (/^ps\d/.test(name) || name.includes("pss") || name === "hs2019"));
  return {
    command: [
      "openssl",
      "dgst",
      `-${digest}`,
      "-verify",
      "tpp-public.pem",
      ...(pss ? ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:auto"] : []),
      "-signature",
      "signature.bin",
      "signed-bytes.bin",
    ],
    // Every dialect's ECDSA signature arrives as r||s (JWS, RFC 9421, and draft-cavage as the gateway verifies it).
    derFromRaw: keyType === "ec",
  };
}

/** An ECDSA signature r||s as DER (SEQUENCE of two INTEGERs). */
export function rawEcdsaToDer(raw: Buffer): Buffer {
  const half = raw.length / 2;
  const integer = (bytes: Buffer) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    let v = bytes.subarray(i);
    if (v[0]! & 0x80) v = Buffer.concat([Buffer.from([0]), v]);
    return Buffer.concat([Buffer.from([0x02]), derLength(v.length), v]);
  };
  const body = Buffer.concat([integer(raw.subarray(0, half)), integer(raw.subarray(half))]);
  return Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]);
}

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  if (n < 0x100) return Buffer.from([0x81, n]);
  return Buffer.from([0x82, n >> 8, n & 0xff]);
}

/** The files of the bundle, or why there can be none. */
export function disputeBundle(sources: BundleSources, found: FoundRecord): Map<string, Buffer> | string {
  const { record, chain, at } = found;
  const files = new Map<string, Buffer>();
  const certificatePem = sources.certificatePem(record.certificate);
  if (!certificatePem) return `certificates/${record.certificate}.pem is missing from the evidence folder`;
  const certificate = new X509Certificate(certificatePem);
  const keyType = certificate.publicKey.asymmetricKeyType ?? "unknown";
  if (record.signedBytes === undefined)
    return `the record keeps only the SHA-256 of its signed bytes (${record.signedBytesSha256 ?? "?"}): they were larger than the inline bound`;

  const covered = coveringSegment(chain, at, record.requestId);
  if (typeof covered === "string") return covered;
  const { segment, checkpoint, response } = covered;
  const chained = chainFiles(sources, segment, checkpoint, files);
  if (chained) return chained;

  const check = opensslCheck(record.signedWith, keyType);
  const signature = Buffer.from(record.signature, "base64");
  const path = signatureFiles(files, sources, {
    text: at.text,
    certificatePem,
    certificate,
    publicKeyFile: "tpp-public.pem",
    signedBytes: record.signedBytes,
    signature: check.derFromRaw ? rawEcdsaToDer(signature) : signature,
    record,
  });
  const answer = response && responseFiles(sources, response.at, response.line, files);
  files.set(
    "README.txt",
    Buffer.from(readme(record, check, segment.length, checkpoint, path, answer, response?.at.lineNumber)),
  );
  return files;
}

export interface FoundResponse {
  readonly chain: ChainFolder;
  readonly at: ParsedLine;
  readonly response: ResponseLine;
}

/**
 * The bundle of a bank's answer egress checked (a `response` record, `verified` or `invalid`): the
 * record, the bank's certificate and public key, the CAs its JWS carried (x5c), the signed bytes and
 * the signature, the body when kept, the chain to the checkpoint covering it, and the README.
 */
export function responseBundle(sources: BundleSources, found: FoundResponse): Map<string, Buffer> | string {
  const { response, chain, at } = found;
  if (response.certificate === undefined)
    return "the record names no bank certificate: the answer failed before its certificate was judged";
  const certificatePem = sources.certificatePem(response.certificate);
  if (!certificatePem) return `certificates/${response.certificate}.pem is missing from the evidence`;
  const signedWith = signedWithOf(response);
  if (response.signedBytesSha256 !== undefined)
    return `the record keeps only the SHA-256 of its signed bytes (${response.signedBytesSha256}): they were larger than the inline bound`;
  if (response.signature === undefined || response.signedBytes === undefined || signedWith === undefined)
    return "the record keeps no signed bytes: its signature header did not parse, or an older gateway wrote it (which kept them for draft-cavage answers only); its signature headers are in the record: use evidence show";
  const covered = coveringSegment(chain, at, undefined);
  if (typeof covered === "string") return covered;
  const files = new Map<string, Buffer>();
  const chained = chainFiles(sources, covered.segment, covered.checkpoint, files);
  if (chained) return chained;

  const certificate = new X509Certificate(certificatePem);
  const check = opensslCheck(signedWith, certificate.publicKey.asymmetricKeyType ?? "unknown");
  const command = check.command.map((a) => (a === "tpp-public.pem" ? "bank-public.pem" : a));
  const signature = Buffer.from(response.signature, "base64");
  const carried = x5cChain(response);
  if (carried.length > 0) files.set("bank-chain.pem", Buffer.from(carried.join("")));
  // Egress: the bank's certificate's validation report and the CAs of its path, as the profile trusted them.
  const path = signatureFiles(files, sources, {
    text: at.text,
    certificatePem,
    certificate,
    publicKeyFile: "bank-public.pem",
    signedBytes: response.signedBytes,
    signature: check.derFromRaw ? rawEcdsaToDer(signature) : signature,
    record: response,
  });
  files.set(
    "README.txt",
    Buffer.from(responseReadme(response, command, check.derFromRaw, carried.length, path, covered)),
  );
  return files;
}

/** The CAs after the signer's certificate in a JWS's x5c, as PEM: the chain as far as the bank sent it. */
function x5cChain(response: ResponseLine): string[] {
  const jws = readDetachedJws(response.signatureHeaders["x-jws-signature"], "x-jws-signature");
  if (isRejection(jws) || !Array.isArray(jws.header.x5c)) return [];
  return jws.header.x5c.slice(1).flatMap((der) => {
    if (typeof der !== "string") return [];
    const lines = der.match(/.{1,64}/g) ?? [];
    return [`-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`];
  });
}

/** The chain's lines to the checkpoint, and the checkpoint's statement, signature and key; or why not. */
function chainFiles(
  sources: BundleSources,
  segment: readonly ParsedLine[],
  checkpoint: CheckpointLine,
  files: Map<string, Buffer>,
): string | undefined {
  const checkpointKey = sources.publicKeyPem(checkpoint.key);
  if (!checkpointKey) return `keys/${checkpoint.key}.pem, the checkpoint's public key, is missing`;
  segment.forEach((p, i) => {
    files.set(`chain/${String(i + 1).padStart(4, "0")}.json`, Buffer.from(p.text));
  });
  files.set("checkpoint.txt", Buffer.from(checkpointStatement(checkpoint)));
  files.set("checkpoint.sig", Buffer.from(checkpoint.signature, "base64"));
  files.set("checkpoint-public.pem", Buffer.from(checkpointKey));
  const keyCertificate = sources.keyCertificatePem(checkpoint.key);
  if (keyCertificate) files.set("checkpoint-certificate.pem", Buffer.from(keyCertificate));
  return undefined;
}

/**
 * The lines from `at` to the first checkpoint after it and, with `requestId`, after the response to
 * that request, when the chain holds one after `at` (ingress signs it after forwarding the request:
 * it may come after a checkpoint).
 */
function coveringSegment(
  chain: ChainFolder,
  at: ParsedLine,
  requestId: string | undefined,
):
  | {
      readonly segment: ParsedLine[];
      readonly checkpoint: CheckpointLine;
      readonly response: { at: ParsedLine; line: ResponseLine } | undefined;
    }
  | string {
  const segment: ParsedLine[] = [];
  let started = false;
  let response: { at: ParsedLine; line: ResponseLine } | undefined;
  for (const p of chainLines(chain)) {
    if (p === at || (p.file === at.file && p.lineNumber === at.lineNumber)) started = true;
    if (!started) continue;
    segment.push(p);
    if (requestId !== undefined && !response && p.line.type === "response" && p.line.requestId === requestId)
      response = { at: p, line: p.line };
    if (p.line.type === "checkpoint" && (response || !laterResponse(chain, p, requestId)))
      return { segment, checkpoint: p.line, response };
  }
  return "no checkpoint covers this record yet (one is written every evidence.checkpointSeconds and at close); try again shortly";
}

/** Whether a response to this request comes after `from` in the chain (its segment must reach it). */
function laterResponse(chain: ChainFolder, from: ParsedLine, requestId: string | undefined): boolean {
  if (requestId === undefined) return false;
  let after = false;
  for (const p of chainLines(chain)) {
    if (p.file === from.file && p.lineNumber === from.lineNumber) after = true;
    else if (after && p.line.type === "response" && p.line.requestId === requestId) return true;
  }
  return false;
}

interface PathFiles {
  readonly report: string | undefined;
  readonly intermediates: readonly string[];
  readonly anchor: string | undefined;
}

/** The validation report and the CAs of its path, as far as the folder holds them. */
/**
 * The files every bundle holds of one signature: its record, the signer's certificate and public
 * key, the signed bytes, the signature (as openssl takes it), the body when kept, and the
 * certificate's path as judged (validation report, intermediates, anchor).
 */
function signatureFiles(
  files: Map<string, Buffer>,
  sources: BundleSources,
  of: {
    readonly text: string;
    readonly certificatePem: string;
    readonly certificate: X509Certificate;
    readonly publicKeyFile: string;
    readonly signedBytes: string;
    readonly signature: Buffer;
    readonly record: { readonly validationReport?: string | undefined; readonly body?: string | undefined };
  },
): PathFiles {
  files.set("record.json", Buffer.from(of.text));
  files.set("certificate.pem", Buffer.from(of.certificatePem));
  files.set(
    of.publicKeyFile,
    Buffer.from(of.certificate.publicKey.export({ type: "spki", format: "pem" }) as string),
  );
  files.set("signed-bytes.bin", Buffer.from(of.signedBytes, "base64"));
  files.set("signature.bin", of.signature);
  if (of.record.body !== undefined) files.set("body.bin", Buffer.from(of.record.body, "base64"));
  const path = pathOf(sources, of.record);
  if (path.report) files.set("validation-report.json", Buffer.from(path.report));
  if (path.intermediates.length > 0) files.set("intermediates.pem", Buffer.from(path.intermediates.join("")));
  if (path.anchor) files.set("trust-anchor.pem", Buffer.from(path.anchor));
  return path;
}

function pathOf(
  sources: BundleSources,
  record: { readonly validationReport?: string | undefined },
): PathFiles {
  const report =
    record.validationReport === undefined ? undefined : sources.reportJson(record.validationReport);
  const intermediates: string[] = [];
  let anchor: string | undefined;
  if (report) {
    let path: { role?: string; sha256?: string }[] = [];
    try {
      path = (JSON.parse(report) as { path?: { role?: string; sha256?: string }[] }).path ?? [];
    } catch {
      // Written by the gateway; a report that does not parse is bundled as it is.
    }
    for (const p of path) {
      const pem = typeof p.sha256 === "string" ? sources.certificatePem(p.sha256) : undefined;
      if (!pem) continue;
      if (p.role === "ca") intermediates.push(pem);
      else if (p.role === "trust-anchor") anchor = pem;
    }
  }
  return { report, intermediates, anchor };
}

/** The response's files; its openssl command when it can be checked (draft-cavage). */
function responseFiles(
  sources: BundleSources,
  at: ParsedLine,
  response: ResponseLine,
  files: Map<string, Buffer>,
): string | undefined {
  files.set("response.json", Buffer.from(at.text));
  const pem = response.certificate === undefined ? undefined : sources.certificatePem(response.certificate);
  if (!pem || response.signedBytes === undefined || response.signature === undefined) return undefined;
  const signedWith = signedWithOf(response);
  if (signedWith === undefined) return undefined;
  const certificate = new X509Certificate(pem);
  const check = opensslCheck(signedWith, certificate.publicKey.asymmetricKeyType ?? "unknown");
  const signature = Buffer.from(response.signature, "base64");
  files.set("bank-certificate.pem", Buffer.from(pem));
  files.set(
    "bank-public.pem",
    Buffer.from(certificate.publicKey.export({ type: "spki", format: "pem" }) as string),
  );
  files.set("response-signed-bytes.bin", Buffer.from(response.signedBytes, "base64"));
  files.set("response-signature.bin", check.derFromRaw ? rawEcdsaToDer(signature) : signature);
  return check.command
    .join(" ")
    .replace("tpp-public.pem", "bank-public.pem")
    .replace("signature.bin", "response-signature.bin")
    .replace("signed-bytes.bin", "response-signed-bytes.bin");
}

/** A response's algorithm: the record's, or (records written before it was kept) its cavage header's. */
function signedWithOf(response: ResponseLine): string | undefined {
  if (response.signedWith !== undefined) return response.signedWith;
  const params = parseSignatureHeader(response.signatureHeaders.signature);
  return isRejection(params) ? undefined : params.algorithm;
}

function readme(
  record: RecordLine,
  check: OpensslCheck,
  lines: number,
  checkpoint: CheckpointLine,
  path: PathFiles,
  response: string | undefined,
  responseLine: number | undefined,
): string {
  const attime = Math.floor(Date.parse(record.time) / 1000);
  const chainCheck = path.anchor
    ? `
   The certificate chains to the CA the gateway trusted, as of the request's time (${record.time}):

   openssl verify -attime ${attime} -partial_chain -CAfile trust-anchor.pem ${path.intermediates.length > 0 ? "-untrusted intermediates.pem " : ""}certificate.pem
   # prints "certificate.pem: OK"
${path.report ? "   validation-report.json is the gateway's report of that check (path, revocation, register).\n" : ""}`
    : path.report
      ? "\n   validation-report.json is the gateway's report of the certificate's check.\n"
      : "";
  return `Evidence of one request accepted by psd2-gateway
================================================

Request: ${record.method} ${record.target}
X-Request-ID: ${record.requestId ?? "(none)"}${record.traceId ? `\nTrace id: ${record.traceId}` : ""}
Received: ${record.time}
TPP: ${record.organizationId}
Certificate SHA-256: ${record.certificate}
Dialect: ${record.dialect}, verified as ${record.signedWith}
Body digest: ${record.bodyDigest}
Validation report: ${record.validationReport ?? "(none)"} (${record.indication}); verdict: ${record.verdict}
Chain: ${record.chain}, line seq ${record.seq}; checkpoint seq ${checkpoint.seq} at ${checkpoint.time}

Everything below needs openssl only (1.1.1 or 3.x).

1. The certificate is the one the record names:

   openssl x509 -in certificate.pem -outform DER | openssl dgst -sha256
   # prints ${record.certificate}
${chainCheck}
2. The TPP signed these bytes (signed-bytes.bin: the ${record.dialect} signing input):

   ${check.command.join(" ")}
   # prints "Verified OK" (pkeyutl: "Signature Verified Successfully")
${check.derFromRaw ? "   # signature.bin is the ECDSA signature re-encoded from r||s (as sent) to DER, as openssl reads it\n" : ""}${
  record.body !== undefined
    ? `
3. The body kept is the body received (its digest is in the record; the signed bytes cover the
   request's Digest / Content-Digest header, or the body itself for UK Open Banking):

   openssl dgst -sha256 -binary body.bin | openssl base64
   # prints ${record.bodyDigest.slice("sha-256=:".length, -1)}
`
    : `
3. The body was not kept (evidence.bodies); its SHA-256 is in the record: ${record.bodyDigest}
`
}
${chainSteps(4, lines, checkpoint)}${
  response
    ? `
6. The bank's answer: response.json is the record of the response the gateway signed for this
   request (the same X-Request-ID; it is in the chain files above). The bank's QSealC signed these
   bytes (its draft-cavage signing string, rebuilt from the signed headers):

   ${response}
   # prints "Verified OK"
`
    : responseLine !== undefined
      ? `
6. The bank's answer: response.json is the record of the response the gateway signed for this
   request (the same X-Request-ID; it is in the chain files above), its signature headers as sent.
`
      : ""
}`;
}

/** The README's steps `n` and `n + 1`: the chain files' hashes, and the checkpoint's signature. */
function chainSteps(n: number, lines: number, checkpoint: CheckpointLine): string {
  const last = String(lines).padStart(4, "0");
  const checkpointCommand =
    checkpoint.alg === "ed25519"
      ? "openssl pkeyutl -verify -pubin -inkey checkpoint-public.pem -rawin -in checkpoint.txt -sigfile checkpoint.sig"
      : "openssl dgst -sha256 -verify checkpoint-public.pem -signature checkpoint.sig checkpoint.txt";
  return `${n}. The record is in the gateway's hash chain, up to a signed checkpoint. chain/0001.json is the
   record's line (the same bytes as record.json); each file's "prev" is the SHA-256 of the file
   before it, and chain/${last}.json is the checkpoint:

   for f in chain/*.json; do openssl dgst -sha256 -r "$f"; done
   # compare each digest with the "prev" of the next file

${n + 1}. The checkpoint is the gateway's: checkpoint.txt is made of chain/${last}.json's fields (chain,
   seq, time, count, prev as "last", key), and its signature holds:

   ${checkpointCommand}
   # prints "Verified OK"
   openssl pkey -pubin -in checkpoint-public.pem -outform DER | openssl dgst -sha256
   # prints ${checkpoint.key} (the checkpoint's "key")
`;
}

const SIGNED_INPUT: Record<string, string> = {
  cavage: "the draft-cavage signing string, rebuilt from the signed headers as received",
  rfc9421:
    "the RFC 9421 signature base, rebuilt from the answer's headers and status and the request as sent (its ;req components)",
  jades: "the JWS signing input: the protected header, '.', and the lines of the headers its sigD.pars lists",
  "uk-ob":
    "the JWS signing input: the protected header, '.', and the body (base64url, or as is with b64: false)",
};

function responseReadme(
  response: ResponseLine,
  command: readonly string[],
  derFromRaw: boolean,
  carried: number,
  path: PathFiles,
  covered: { readonly segment: readonly ParsedLine[]; readonly checkpoint: CheckpointLine },
): string {
  const attime = Math.floor(Date.parse(response.time) / 1000);
  const untrusted = carried > 0 ? "-untrusted bank-chain.pem " : "";
  const chainCheck = path.anchor
    ? `   It chains to the CA the gateway trusted for this bank (the profile's responses.caDir), as of the
   answer's time (validation-report.json is the gateway's report of that check):

   openssl verify -attime ${attime} -partial_chain -CAfile trust-anchor.pem ${path.intermediates.length > 0 ? "-untrusted intermediates.pem " : ""}certificate.pem
   # prints "certificate.pem: OK"`
    : `   It chains to the bank's CA (for egress, the profile's responses.caDir; ${carried > 0 ? "bank-chain.pem holds the CAs the bank sent with it in x5c" : "the bank sent no CAs with it"}), as of the answer's time:

   openssl verify -attime ${attime} -CAfile <the bank's root CA> ${untrusted}certificate.pem
   # prints "certificate.pem: OK"`;
  const title =
    response.verdict === "signed"
      ? "Evidence of one response psd2-gateway signed with the bank's QSealC (ingress)"
      : "Evidence of one bank answer psd2-gateway checked (egress)";
  return `${title}
${"=".repeat(title.length)}

Request: ${response.method} ${response.target}
X-Request-ID: ${response.requestId ?? "(none)"}${response.traceId ? `\nTrace id: ${response.traceId}` : ""}
Received: ${response.time}
Status: ${response.status}
Bank: ${response.organizationId ?? "(no organizationIdentifier)"}
Certificate SHA-256: ${response.certificate}
Dialect: ${response.dialect}, signed as ${response.signedWith ?? "?"}
Body digest: ${response.bodyDigest}
Verdict: ${response.verdict}${response.verdict === "invalid" ? " (the gateway found the signature did not hold; step 2 shows it)" : ""}
Chain: ${response.chain}, line seq ${response.seq}; checkpoint seq ${covered.checkpoint.seq} at ${covered.checkpoint.time}

Everything below needs openssl only (1.1.1 or 3.x).

1. The certificate is the one the record names:

   openssl x509 -in certificate.pem -outform DER | openssl dgst -sha256
   # prints ${response.certificate}

${chainCheck}

2. The bank signed these bytes (signed-bytes.bin: ${SIGNED_INPUT[response.dialect] ?? "the signed bytes"}):

   ${command.join(" ")}
   # prints "Verified OK" (pkeyutl: "Signature Verified Successfully")
${derFromRaw ? "   # signature.bin is the ECDSA signature re-encoded from r||s (as sent) to DER, as openssl reads it\n" : ""}
${
  response.body !== undefined
    ? `3. The body kept is the body received (its digest is in the record; the signed bytes cover the
   answer's Digest / Content-Digest header, or the body itself for UK Open Banking):

   openssl dgst -sha256 -binary body.bin | openssl base64
   # prints ${response.bodyDigest.slice("sha-256=:".length, -1)}
`
    : `3. The body was not kept (evidence.bodies); its SHA-256 is in the record: ${response.bodyDigest}
`
}
${chainSteps(4, covered.segment.length, covered.checkpoint)}`;
}
