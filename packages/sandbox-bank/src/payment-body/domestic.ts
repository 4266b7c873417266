/**
 * The body of a norwegian-domestic-credit-transfers payment: NOK from one Norwegian account to
 * another, with either a free-text message (remittanceInformationUnstructured) or a payment
 * reference, KID, in the structured remittance information.
 *
 * Structured remittance: `remittanceInformationStructuredArray` replaces the deprecated
 * `remittanceInformationStructured` (SPEC 9.3). Both are accepted; the single one is read as an
 * array of one; both together must name the same reference. A Norwegian payment carries one KID,
 * so the array holds exactly one entry {reference, referenceType?, referenceIssuer?}, whose
 * referenceType, when given, is "KID" or "SCOR" (the ISO 20022 code Norwegian banks send a KID
 * under). The reference must be a valid KID (./kid.ts; SPEC 7: 400 otherwise). A KID payment
 * carries no free-text message in Norwegian clearing, so a body with both a KID and
 * remittanceInformationUnstructured is refused rather than one of them silently dropped.
 */

import { checkKid } from "../kid.js";
import {
  containsOutsideBmp,
  describe,
  formatRefusal,
  isObject,
  type JsonObject,
  member,
  type Parsed,
  parsed,
  readAmount,
  readNorwegianAccount,
  readText,
} from "./fields.js";

export const DOMESTIC_PRODUCT = "norwegian-domestic-credit-transfers";

export interface DomesticPaymentRequest {
  /** As the TPP sent it, e.g. "10.5". */
  readonly amount: string;
  readonly amountMinor: number;
  readonly currency: "NOK";
  readonly debtorBban: string;
  readonly creditorBban: string;
  readonly creditorName: string;
  readonly remittance: string | undefined;
  /** The payment reference (KID) from the structured remittance information; always set by the parser. */
  readonly kid?: string | undefined;
}

export const DOMESTIC_MEMBERS = "instructedAmount, debtorAccount, creditorAccount and creditorName";

const MAX_CREDITOR_NAME = 70;
const MAX_REMITTANCE = 140;
const MAX_REFERENCE_ISSUER = 35;
const STRUCTURED = "remittanceInformationStructured";
const STRUCTURED_ARRAY = "remittanceInformationStructuredArray";
const KID_REFERENCE_TYPES: ReadonlySet<string> = new Set(["KID", "SCOR"]);

/** The members of a domestic payment in `body` (also the base of a periodic one). */
export function readDomesticPayment(body: JsonObject): Parsed<DomesticPaymentRequest> {
  const instructed = readAmount(body, "instructedAmount", { currency: "NOK", product: DOMESTIC_PRODUCT });
  if (!instructed.ok) return instructed;
  const debtor = readNorwegianAccount(body, "debtorAccount");
  if (!debtor.ok) return debtor;
  const creditor = readNorwegianAccount(body, "creditorAccount");
  if (!creditor.ok) return creditor;
  const creditorName = readText(body, "creditorName", "creditorName", {
    max: MAX_CREDITOR_NAME,
    required: true,
  });
  if (!creditorName.ok) return creditorName;
  const remittance = readUnstructured(body);
  if (!remittance.ok) return remittance;
  const kid = readKid(body);
  if (!kid.ok) return kid;
  if (kid.value !== undefined && remittance.value !== undefined) {
    return formatRefusal(
      "Send either a payment reference (KID) in remittanceInformationStructuredArray or a message in remittanceInformationUnstructured, not both: a KID payment carries no message",
    );
  }
  return parsed({
    amount: instructed.value.amount,
    amountMinor: instructed.value.amountMinor,
    currency: "NOK",
    debtorBban: debtor.value.bban,
    creditorBban: creditor.value.bban,
    creditorName: creditorName.value!,
    remittance: remittance.value,
    kid: kid.value,
  });
}

/** remittanceInformationUnstructured: optional, any text up to 140 characters (even blank, as before). */
export function readUnstructured(body: JsonObject): Parsed<string | undefined> {
  const remittance = member(body, "remittanceInformationUnstructured");
  if (remittance === undefined) return parsed(undefined);
  if (typeof remittance !== "string") {
    return formatRefusal(
      `remittanceInformationUnstructured must be a string when present; got ${describe(remittance)}`,
    );
  }
  if (remittance.length > MAX_REMITTANCE) {
    return formatRefusal(
      `remittanceInformationUnstructured is ${remittance.length} characters long; at most ${MAX_REMITTANCE} are allowed`,
    );
  }
  if (containsOutsideBmp(remittance)) {
    return formatRefusal(
      "remittanceInformationUnstructured contains a character the core system cannot process (such as an emoji)",
    );
  }
  return parsed(remittance);
}

/** The KID of the structured remittance information, from the array or the deprecated single member. */
function readKid(body: JsonObject): Parsed<string | undefined> {
  const single = member(body, STRUCTURED);
  const array = member(body, STRUCTURED_ARRAY);
  let fromSingle: string | undefined;
  if (single !== undefined) {
    const reference = readReference(single, STRUCTURED);
    if (!reference.ok) return reference;
    fromSingle = reference.value;
  }
  let fromArray: string | undefined;
  if (array !== undefined) {
    if (!Array.isArray(array)) {
      return formatRefusal(
        `${STRUCTURED_ARRAY} must be an array holding one {reference, referenceType} object; got ${describe(array)}`,
      );
    }
    if (array.length !== 1) {
      return formatRefusal(
        `${STRUCTURED_ARRAY} holds ${array.length} entries; a Norwegian payment carries exactly one payment reference (KID), so send one entry`,
      );
    }
    const reference = readReference(array[0], `${STRUCTURED_ARRAY}[0]`);
    if (!reference.ok) return reference;
    fromArray = reference.value;
  }
  if (fromSingle !== undefined && fromArray !== undefined && fromSingle !== fromArray) {
    return formatRefusal(
      `${STRUCTURED}.reference and ${STRUCTURED_ARRAY}[0].reference differ; ${STRUCTURED} is deprecated and replaced by ${STRUCTURED_ARRAY} (SPEC 9.3): send the array only`,
    );
  }
  return parsed(fromArray ?? fromSingle);
}

function readReference(value: unknown, path: string): Parsed<string> {
  if (!isObject(value)) {
    return formatRefusal(
      `${path} must be an object {reference, referenceType} holding a payment reference (KID); got ${describe(value)}`,
    );
  }
  const reference = member(value, "reference");
  if (typeof reference !== "string") {
    return formatRefusal(
      `${path}.reference must be a string holding the payment reference (KID); got ${describe(reference)}`,
    );
  }
  const referenceType = member(value, "referenceType");
  if (
    referenceType !== undefined &&
    (typeof referenceType !== "string" || !KID_REFERENCE_TYPES.has(referenceType))
  ) {
    return formatRefusal(
      `${path}.referenceType must be "KID" (or "SCOR") when present: a ${DOMESTIC_PRODUCT} payment carries only a Norwegian KID; got ${describe(referenceType)}`,
    );
  }
  const issuer = readText(value, "referenceIssuer", `${path}.referenceIssuer`, { max: MAX_REFERENCE_ISSUER });
  if (!issuer.ok) return issuer;
  const kid = checkKid(reference);
  if (!kid.ok) {
    return formatRefusal(
      `${path}.reference ${JSON.stringify(reference.slice(0, 40))} is not a valid payment reference (KID): ${kid.problem}`,
    );
  }
  return parsed(kid.kid);
}

/** What makes two domestic payments the same payment: debtor, creditor, amount and remittance (text or KID). */
export function domesticKeyParts(payment: DomesticPaymentRequest): readonly unknown[] {
  return [
    payment.debtorBban,
    payment.creditorBban,
    payment.amountMinor,
    payment.remittance ?? null,
    payment.kid ?? null,
  ];
}
