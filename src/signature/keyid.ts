/**
 * keyId `SN=<serial, upper-case hex>,CA=<issuer DN, RFC 2253>` (SPEC 5.3): built from a
 * certificate, and matched against one leniently enough for the formats real peers send.
 */

import { readCertificateFields, serialToBigInt, serialToHex } from "../asn1/certificate.js";
import { type Rejection, reject } from "../errors.js";
import { type DistinguishedName, dnStringMatches, formatRfc2253, readName } from "../x500/name.js";

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

/** `SN=8E5C660AD95E4DBF,CA=CN=Adorsys,OU=Adorsys,…`: what a TPP puts in keyId for its certificate. */
export function buildKeyId(target: KeyIdTarget): string {
  return `SN=${serialToHex(target.serial)},CA=${formatRfc2253(target.issuer)}`;
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
 * Splits `SN=…,CA=…` (or `CA=…,SN=…`); names are case-insensitive. A hand-written scan rather
 * than one pattern: keyIds are attacker input, and patterns with overlapping `\s*` backtrack.
 */
export function parseKeyId(keyId: string): ParsedKeyId | undefined {
  if (keyId.length > MAX_KEY_ID) return undefined;
  const text = keyId.trim();
  const sn = SN_NAME.exec(text);
  if (sn) {
    const comma = text.indexOf(",", sn[0].length);
    if (comma < 0) return undefined;
    const rest = text.slice(comma + 1).trimStart();
    const ca = CA_NAME.exec(rest);
    if (!ca) return undefined;
    const caValue = rest.slice(ca[0].length).trim();
    return caValue.length > 0 ? { sn: text.slice(sn[0].length, comma).trim(), ca: caValue } : undefined;
  }
  const ca = CA_NAME.exec(text);
  if (ca) {
    const comma = text.lastIndexOf(",");
    if (comma < ca[0].length) return undefined;
    const tail = text.slice(comma + 1).trimStart();
    const snTail = SN_NAME.exec(tail);
    if (!snTail) return undefined;
    return { sn: tail.slice(snTail[0].length).trim(), ca: text.slice(ca[0].length, comma).trim() };
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
    return reject(
      "SIGNATURE_INVALID",
      `Signature keyId issuer CA=${parsed.ca.slice(0, 200)} does not match the certificate issuer ${formatRfc2253(target.issuer)}; expected keyId '${expected}'`,
    );
  }
  // Decimal serials depend on the option, so only option-free matches are remembered.
  if (!options.allowDecimalSerial && memo.matched.size < MAX_REMEMBERED_SPELLINGS) memo.matched.add(keyId);
  return true;
}
