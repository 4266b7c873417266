/**
 * keyId `SN=<serial, upper-case hex>,CA=<issuer DN, RFC 2253>` (SPEC 5.3): built from a
 * certificate, and matched against one leniently enough for the formats real peers send.
 */

import { isUtf8 } from "node:buffer";
import { readCertificateFields, serialToBigInt, serialToHex } from "../asn1/certificate.js";
import { type Rejection, reject } from "../errors.js";
import { detached } from "../kept.js";
import { type DistinguishedName, dnStringMatches, formatRfc2253, readName } from "../x500/name.js";
import type { SignatureParams } from "./header.js";

/** What a keyId names: a serial and an issuer. */
export interface KeyIdTarget {
  /** The serial INTEGER content bytes, as encoded in the certificate. */
  readonly serial: Uint8Array;
  readonly issuer: DistinguishedName;
}

export function keyIdTargetFromDer(der: Uint8Array): KeyIdTarget {
  const fields = readCertificateFields(der);
  return { serial: fields.serial, issuer: readName(fields.issuer) };
}

/**
 * How a signer writes its keyId. SPEC 5.3 is upper-case hex and RFC 2253; banks' verifiers that
 * compare the keyId as text want other spellings (met in the field: lower-case hex, Java's `, `
 * between RDNs, spaces as `%20`).
 */
export interface KeyIdSpelling {
  readonly serial?: "upper-hex" | "lower-hex" | "decimal";
  readonly issuerSeparator?: "," | ", ";
  readonly spaces?: "keep" | "percent-20";
}

/** `SN=8E5C660AD95E4DBF,CA=CN=Adorsys,OU=Adorsys,…`: what a TPP puts in keyId for its certificate. */
export function buildKeyId(target: KeyIdTarget, spelling: KeyIdSpelling = {}): string {
  const hex = serialToHex(target.serial);
  const serial =
    spelling.serial === "lower-hex"
      ? hex.toLowerCase()
      : spelling.serial === "decimal"
        ? serialToBigInt(target.serial).toString(10)
        : hex;
  const issuer = formatRfc2253(target.issuer, spelling.issuerSeparator ?? ",");
  const keyId = `SN=${serial},CA=${issuer}`;
  return spelling.spaces === "percent-20" ? keyId.replaceAll(" ", "%20") : keyId;
}

export interface KeyIdOptions {
  /** Also read the SN as decimal when it is all digits (some banks send decimal serials). */
  readonly allowDecimalSerial?: boolean;
}

interface ParsedKeyId {
  readonly sn: string;
  readonly ca: string;
}

const SN_NAME = /^sn\s*=/i;
const CA_NAME = /^ca\s*=/i;
const MAX_KEY_ID = 4096;

/**
 * Trims white space around a keyId part, except a trailing space that a backslash escapes: RFC 2253
 * writes a value's trailing space as `\ ` (`CN=Bank\ `), and dropping it leaves a lone backslash.
 * Only space and tab at the end: other white space there belongs to the DN value.
 */
function trimPart(text: string): string {
  const start = text.length - text.trimStart().length;
  let end = text.length;
  while (end > start) {
    const last = text.charCodeAt(end - 1);
    if ((last !== 0x20 && last !== 0x09) || text.charCodeAt(end - 2) === 0x5c) break;
    end--;
  }
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

/**
 * Splits `SN=…,CA=…` (or `CA=…,SN=…`); names are case-insensitive. A hand-written scan rather
 * than one pattern: keyIds are attacker input, and patterns with overlapping `\s*` backtrack.
 */
export function parseKeyId(keyId: string): ParsedKeyId | undefined {
  if (keyId.length > MAX_KEY_ID) return undefined;
  const text = trimPart(keyId);
  const sn = SN_NAME.exec(text);
  if (sn) {
    const comma = text.indexOf(",", sn[0].length);
    if (comma < 0) return undefined;
    const rest = text.slice(comma + 1).trimStart();
    const ca = CA_NAME.exec(rest);
    if (!ca) return undefined;
    const caValue = trimPart(rest.slice(ca[0].length));
    return caValue.length > 0 ? { sn: text.slice(sn[0].length, comma).trim(), ca: caValue } : undefined;
  }
  const ca = CA_NAME.exec(text);
  if (ca) {
    const comma = text.lastIndexOf(",");
    if (comma < ca[0].length) return undefined;
    const tail = text.slice(comma + 1).trimStart();
    const snTail = SN_NAME.exec(tail);
    if (!snTail) return undefined;
    return { sn: tail.slice(snTail[0].length).trim(), ca: trimPart(text.slice(ca[0].length, comma)) };
  }
  return undefined;
}

/** The numbers a written serial may stand for: hex (with or without sign byte or `0x`), and decimal when allowed. */
function serialCandidates(sn: string, allowDecimal: boolean): bigint[] {
  const out: bigint[] = [];
  let text = sn.trim();
  let negative = false;
  if (text.startsWith("-")) {
    negative = true;
    text = text.slice(1);
  }
  if (/^0x/i.test(text)) text = text.slice(2);
  text = text.replace(/[:\s]/g, "");
  if (/^[0-9a-f]+$/i.test(text) && text.length <= 80) {
    const v = BigInt(`0x${text}`);
    out.push(negative ? -v : v);
  }
  if (allowDecimal && /^[0-9]+$/.test(text) && text.length <= 100) {
    const v = BigInt(text);
    out.push(negative ? -v : v);
  }
  return out;
}

/** True when `sn` names the serial: compared as numbers, signed or as the raw unsigned bytes. */
export function serialMatches(sn: string, serial: Uint8Array, options: KeyIdOptions = {}): boolean {
  const signed = serialToBigInt(serial);
  const unsigned = BigInt(`0x${Buffer.from(serial).toString("hex")}`);
  return serialCandidates(sn, options.allowDecimalSerial ?? false).some(
    (c) => c === signed || c === unsigned,
  );
}

/**
 * What is derived once per certificate: its own keyId, and the keyId spellings already seen to
 * match it. A TPP sends the same keyId on every request, so after the first request the check
 * is one string comparison instead of a DN parse.
 */
interface KeyIdMemo {
  readonly expected: string;
  readonly matched: Set<string>;
}

const MAX_REMEMBERED_SPELLINGS = 8;
const memos = new WeakMap<KeyIdTarget, KeyIdMemo>();

function memoOf(target: KeyIdTarget): KeyIdMemo {
  let memo = memos.get(target);
  if (!memo) {
    memo = { expected: buildKeyId(target), matched: new Set() };
    memos.set(target, memo);
  }
  return memo;
}

/** The certificate's own keyId (`SN=…,CA=…` as buildKeyId writes it), worked out once per target. */
export function expectedKeyId(target: KeyIdTarget): string {
  return memoOf(target).expected;
}

const HIGH_LATIN1 = /[\x80-\xff]/;
const BEYOND_LATIN1 = /[^\x00-\xff]/;

/**
 * A CA part that arrived as raw UTF-8 bytes in an unencoded header (Node reads them as Latin-1,
 * one char per byte), read back as UTF-8: `KÃ¶ln` → `Köln`. undefined when that changes nothing.
 */
function asUtf8(ca: string): string | undefined {
  if (!HIGH_LATIN1.test(ca) || BEYOND_LATIN1.test(ca)) return undefined;
  const bytes = Buffer.from(ca, "latin1");
  return isUtf8(bytes) ? bytes.toString("utf8") : undefined;
}

/** Checks that keyId names the certificate; the rejection names both values. */
export function matchKeyId(keyId: string, target: KeyIdTarget, options: KeyIdOptions = {}): true | Rejection {
  const memo = memoOf(target);
  if (keyId === memo.expected || memo.matched.has(keyId)) return true;
  const expected = memo.expected;
  const parsed = parseKeyId(keyId);
  if (!parsed) {
    return reject(
      "SIGNATURE_INVALID",
      `Signature keyId '${keyId.slice(0, 200)}' is not of the form SN=<serial hex>,CA=<issuer DN> (SPEC 5.3); for this certificate it is '${expected}'`,
    );
  }
  if (!serialMatches(parsed.sn, target.serial, options)) {
    return reject(
      "SIGNATURE_INVALID",
      `Signature keyId serial SN=${parsed.sn.slice(0, 80)} does not match the certificate serial ${serialToHex(target.serial)}; expected keyId '${expected}'`,
    );
  }
  if (!dnStringMatches(parsed.ca, target.issuer)) {
    const utf8 = asUtf8(parsed.ca);
    if (utf8 === undefined || !dnStringMatches(utf8, target.issuer)) {
      return reject(
        "SIGNATURE_INVALID",
        `Signature keyId issuer CA=${parsed.ca.slice(0, 200)} does not match the certificate issuer ${formatRfc2253(target.issuer)}; expected keyId '${expected}'`,
      );
    }
  }
  // Decimal serials depend on the option, so only option-free matches are remembered.
  if (!options.allowDecimalSerial && memo.matched.size < MAX_REMEMBERED_SPELLINGS)
    memo.matched.add(detached(keyId));
  return true;
}

/**
 * matchKeyId for a parsed Signature header: the keyId as read (quoted-pairs `\"` and `\\`
 * undone), and when that does not name the certificate, as written between the quotes, for
 * signers that copy an RFC 2253 issuer holding `\\` or `\"` into the quotes unchanged. The
 * rejection is the one for the keyId as read.
 */
export function matchSignatureKeyId(
  params: Pick<SignatureParams, "keyId" | "keyIdAsWritten">,
  target: KeyIdTarget,
  options: KeyIdOptions = {},
): true | Rejection {
  const asRead = matchKeyId(params.keyId, target, options);
  if (asRead === true || params.keyIdAsWritten === undefined) return asRead;
  return matchKeyId(params.keyIdAsWritten, target, options) === true ? true : asRead;
}
