/**
 * The body of a norwegian-cross-border-credit-transfers payment (SPEC 2.5, 4.4): a payment from
 * the PSU's Norwegian account to a bank abroad, with the regulatory reporting Norwegian law asks
 * of cross-border payments.
 *
 * SPEC 2.5 does not say which members are required; the sandbox decides:
 *
 * | member | required | why |
 * |---|---|---|
 * | instructedAmount {amount, currency} | yes | any ISO 4217 currency: cross-border payments are often not in NOK |
 * | debtorAccount {bban, currency?} | yes | the PSU's own 11-digit Norwegian account |
 * | creditorAccount {iban or bban, currency?} | yes | exactly one of iban (checked: country, mod 97) or a foreign bban (1–30 letters or digits) |
 * | regulatoryReportingCode | yes | the product exists to carry the report (SPEC 2.5: "payments that need regulatory reporting under Norwegian law"); the code is the 2-digit Norwegian payment type code (betalingsartkode, e.g. "14" for goods) |
 * | regulatoryReportingAmount {amount, currency} | yes | the amount the report concerns; when in the instructed currency it cannot exceed the instructed amount. Required although the law only demands a purpose above NOK 100 000, because the sandbox has no exchange rates to tell which payments are above it |
 * | regulatoryReportingInformation | no | a short description of the purpose, at most 35 characters (ISO 20022 Max35Text, what the bank forwards) |
 * | creditorName, creditorAgent (BIC), creditorAddress.townName, creditorAddress.country | from 2026-08-13 | SPEC 9.4, see ../address.ts; optional before, but checked for shape whenever present |
 * | creditorAddress street, buildingNumber, postalCode | no | |
 * | remittanceInformationUnstructured | no | a message to the creditor, at most 140 characters, as for domestic payments |
 *
 * The structured-address rule is applied to every payment of this product: it covers SEPA and
 * SWIFT-routed payments alike (SPEC 9.4), and every payment of this product is one or the other.
 */

import {
  missingStructuredAddressParts,
  type PostalAddress,
  readPostalAddress,
  structuredAddressRefusalText,
} from "../address.js";
import { formatMinor } from "../money.js";
import { readUnstructured } from "./domestic.js";
import {
  type Amount,
  describe,
  formatRefusal,
  isObject,
  type JsonObject,
  member,
  type Parsed,
  parsed,
  readAmount,
  readNorwegianAccount,
  readOptionalCurrency,
  readText,
} from "./fields.js";
import { bicProblem, ibanProblem, isForeignBban } from "./identifiers.js";

export const CROSS_BORDER_PRODUCT = "norwegian-cross-border-credit-transfers";

export const CROSS_BORDER_MEMBERS =
  "instructedAmount, debtorAccount, creditorAccount, creditorName, creditorAgent, creditorAddress, regulatoryReportingCode and regulatoryReportingAmount";

export interface ForeignAccount {
  readonly scheme: "iban" | "bban";
  /** The IBAN or the foreign bank's account number, as sent. */
  readonly identifier: string;
  readonly currency: string | undefined;
}

export interface RegulatoryReporting {
  /** The 2-digit Norwegian payment type code. */
  readonly code: string;
  readonly amount: Amount;
  readonly information: string | undefined;
}

export interface CrossBorderPaymentRequest {
  /** As the TPP sent it, e.g. "10.5". */
  readonly amount: string;
  readonly amountMinor: number;
  readonly currency: string;
  readonly debtorBban: string;
  readonly debtorCurrency: string | undefined;
  readonly creditorAccount: ForeignAccount;
  readonly creditorName: string | undefined;
  /** The creditor agent's BIC. */
  readonly creditorAgent: string | undefined;
  readonly creditorAddress: PostalAddress | undefined;
  readonly regulatoryReporting: RegulatoryReporting;
  readonly remittance: string | undefined;
}

const MAX_CREDITOR_NAME = 70;
const MAX_REPORTING_INFORMATION = 35;
const REPORTING_CODE = /^\d{2}$/;

/** The members of a cross-border payment in `body`, with the structured-address rule as of `today`. */
export function readCrossBorderPayment(body: JsonObject, today: string): Parsed<CrossBorderPaymentRequest> {
  const instructed = readAmount(body, "instructedAmount");
  if (!instructed.ok) return instructed;
  const debtor = readNorwegianAccount(body, "debtorAccount");
  if (!debtor.ok) return debtor;
  const creditorAccount = readForeignAccount(body, "creditorAccount");
  if (!creditorAccount.ok) return creditorAccount;
  const creditorName = readText(body, "creditorName", "creditorName", { max: MAX_CREDITOR_NAME });
  if (!creditorName.ok) return creditorName;
  const creditorAgent = readBic(body, "creditorAgent");
  if (!creditorAgent.ok) return creditorAgent;
  const creditorAddress = readPostalAddress(body, "creditorAddress");
  if (!creditorAddress.ok) return creditorAddress;
  const reporting = readRegulatoryReporting(body, instructed.value);
  if (!reporting.ok) return reporting;
  const remittance = readUnstructured(body);
  if (!remittance.ok) return remittance;

  const missing = missingStructuredAddressParts(
    {
      creditorName: creditorName.value,
      creditorAddress: creditorAddress.value,
      creditorAgent: creditorAgent.value,
    },
    today,
  );
  if (missing.length > 0) return formatRefusal(structuredAddressRefusalText(missing));

  return parsed({
    amount: instructed.value.amount,
    amountMinor: instructed.value.amountMinor,
    currency: instructed.value.currency,
    debtorBban: debtor.value.bban,
    debtorCurrency: debtor.value.currency,
    creditorAccount: creditorAccount.value,
    creditorName: creditorName.value,
    creditorAgent: creditorAgent.value,
    creditorAddress: creditorAddress.value,
    regulatoryReporting: reporting.value,
    remittance: remittance.value,
  });
}

function readForeignAccount(body: JsonObject, name: string): Parsed<ForeignAccount> {
  const account = member(body, name);
  if (!isObject(account)) {
    return formatRefusal(`${name} must be an object {iban} or {bban}; got ${describe(account)}`);
  }
  const iban = member(account, "iban");
  const bban = member(account, "bban");
  if (iban !== undefined && bban !== undefined) {
    return formatRefusal(
      `${name} holds both iban and bban; send one of them (iban when the creditor has one)`,
    );
  }
  const currency = readOptionalCurrency(account, `${name}.currency`);
  if (!currency.ok) return currency;
  if (iban !== undefined) {
    if (typeof iban !== "string") {
      return formatRefusal(`${name}.iban must be a string; got ${describe(iban)}`);
    }
    const problem = ibanProblem(iban);
    if (problem !== undefined) {
      return formatRefusal(`${name}.iban ${JSON.stringify(iban.slice(0, 40))} is not an IBAN: ${problem}`);
    }
    return parsed({ scheme: "iban", identifier: iban, currency: currency.value });
  }
  if (bban !== undefined) {
    if (typeof bban !== "string" || !isForeignBban(bban)) {
      return formatRefusal(
        `${name}.bban must be the creditor bank's account number, 1 to 30 letters or digits without spaces; got ${describe(bban)}`,
      );
    }
    return parsed({ scheme: "bban", identifier: bban, currency: currency.value });
  }
  return formatRefusal(`${name} must hold iban (or bban for a country without IBAN); got neither`);
}

function readBic(body: JsonObject, name: string): Parsed<string | undefined> {
  const bic = member(body, name);
  if (bic === undefined) return parsed(undefined);
  if (typeof bic !== "string") {
    return formatRefusal(
      `${name} must be the creditor bank's BIC as a string, such as "DNBANOKKXXX", when present; got ${describe(bic)}`,
    );
  }
  const problem = bicProblem(bic);
  if (problem !== undefined) {
    return formatRefusal(`${name} ${JSON.stringify(bic.slice(0, 40))} is not a BIC: ${problem}`);
  }
  return parsed(bic);
}

function readRegulatoryReporting(body: JsonObject, instructed: Amount): Parsed<RegulatoryReporting> {
  const code = member(body, "regulatoryReportingCode");
  if (code === undefined) {
    return formatRefusal(
      `regulatoryReportingCode is required for a ${CROSS_BORDER_PRODUCT} payment: send the 2-digit Norwegian payment type code, such as "14"`,
    );
  }
  if (typeof code !== "string" || !REPORTING_CODE.test(code)) {
    return formatRefusal(
      `regulatoryReportingCode must be the 2-digit Norwegian payment type code as a string, such as "14"; got ${describe(code)}`,
    );
  }
  if (member(body, "regulatoryReportingAmount") === undefined) {
    return formatRefusal(
      `regulatoryReportingAmount is required for a ${CROSS_BORDER_PRODUCT} payment: send {amount, currency}, the amount the report concerns`,
    );
  }
  const amount = readAmount(body, "regulatoryReportingAmount");
  if (!amount.ok) return amount;
  if (amount.value.currency === instructed.currency && amount.value.amountMinor > instructed.amountMinor) {
    return formatRefusal(
      `regulatoryReportingAmount.amount ${formatMinor(amount.value.amountMinor)} exceeds instructedAmount.amount ${formatMinor(instructed.amountMinor)}; the report cannot concern more than the payment`,
    );
  }
  const information = readText(body, "regulatoryReportingInformation", "regulatoryReportingInformation", {
    max: MAX_REPORTING_INFORMATION,
  });
  if (!information.ok) return information;
  return parsed({ code, amount: amount.value, information: information.value });
}

/** What makes two cross-border payments the same payment: debtor, creditor, amount with currency, remittance. */
export function crossBorderKeyParts(payment: CrossBorderPaymentRequest): readonly unknown[] {
  return [
    payment.debtorBban,
    payment.creditorAccount.scheme,
    payment.creditorAccount.identifier,
    payment.amountMinor,
    payment.currency,
    payment.remittance ?? null,
  ];
}
