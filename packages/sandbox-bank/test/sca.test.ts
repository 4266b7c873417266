/**
 * SCA by redirect, consents and payment authorisation in the sandbox bank (SPEC 1.8, 1.9, 2.4,
 * 2.6, 5.11–5.15, 7, 8), walked at the real SCA page over HTTP (sca-walk.ts).
 */

import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { worstStatus } from "../src/baskets.js";
import { type Customer, createSandboxBank, SANDBOX_ONE_TIME_CODE } from "../src/index.js";
import { NOW, type RunningBank, startBank, TEST_GATEWAY_SECRET } from "./helpers.js";
import { walkSca } from "./sca-walk.js";

const TPP = "PSDNO-FSA-TPPA";
const OTHER_TPP = "PSDNO-FSA-TPPB";
const REDIRECT = "https://tpp.example/callback?state=abc";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const DAY = 86_400_000;

let now = NOW;
let running: RunningBank;
let kari: Customer;
let ola: Customer;
let nordvik: Customer;

beforeAll(async () => {
  running = await startBank({ clock: () => now });
  const customers = running.bank.data.customers;
  kari = customers[0]!;
  ola = customers[1]!;
  nordvik = customers[3]!;
});
afterAll(() => running.listener.close());
beforeEach(() => {
  now = NOW;
});

function tppHeaders(extra: Record<string, string> = {}, tpp = TPP): Record<string, string> {
  return { "X-TPP-Organization-Id": tpp, "TPP-Redirect-URI": REDIRECT, ...extra };
}

async function startConsent(extra: Record<string, string> = {}, tpp = TPP) {
  const answer = await running.call("/v1/bank-offered-consents", {
    method: "POST",
    headers: tppHeaders(extra, tpp),
    body: "{}",
  });
  return answer as typeof answer & {
    json: { consentId: string; consentStatus: string; _links: Record<string, { href: string }> };
  };
}

/** A consent granted at the page; the redirect's parameters. */
async function grant(
  customer: Customer,
  options: { accounts?: readonly string[]; agreement?: string; session?: string; tpp?: string } = {},
) {
  const started = await startConsent(
    options.session ? { "TPP-Session-ID": options.session } : {},
    options.tpp,
  );
  expect(started.status).toBe(201);
  const walk = await walkSca(started.json._links.scaRedirect!.href, {
    identity: customer.customerNumber,
    ...(options.accounts ? { accounts: options.accounts } : {}),
    ...(options.agreement ? { agreement: options.agreement } : {}),
  });
  return { consentId: started.json.consentId, params: walk.redirect.searchParams, walk };
}

function read(path: string, psu: Record<string, string>, tpp = TPP) {
  return running.call(path, { headers: { ...tppHeaders({}, tpp), ...psu } });
}

const code = (json: unknown) => (json as { tppMessages?: { code: string }[] }).tppMessages?.[0]?.code;

describe("bank-offered consent through the SCA page (SPEC 1.9, 2.6)", () => {
  it("answers POST with received and an scaRedirect to the bank's own page, ignoring the body", async () => {
    const started = await startConsent();
    expect(started.status).toBe(201);
    expect(started.json.consentStatus).toBe("received");
    expect(started.json._links.scaRedirect!.href).toMatch(new RegExp(`^${running.listener.scaUrl}/sca/`));
    const page = await fetch(started.json._links.scaRedirect!.href);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<label for="identity">');
  });

  it("redirects back with psu-id, tpp-session-id and context, keeping the TPP's own query", async () => {
    const { params, consentId } = await grant(kari, { session: "session-1" });
    expect(params.get("state")).toBe("abc");
    expect(params.get("psu-id")).toMatch(UUID);
    expect(params.get("tpp-session-id")).toBe("session-1");
    expect(params.get("context")).toBe("PRIVATE");
    expect(params.has("psu-corporate-id")).toBe(false);
    const status = await running.call(`/v1/bank-offered-consents/${consentId}/status`, {
      headers: tppHeaders(),
    });
    expect(status.json).toEqual({ consentStatus: "valid" });
  });

  it("gives one stable psu-id per TPP and PSU, and another TPP's psu-id reaches nothing", async () => {
    const first = (await grant(kari)).params.get("psu-id");
    const again = (await grant(kari)).params.get("psu-id");
    const otherTpp = (await grant(kari, { tpp: OTHER_TPP })).params.get("psu-id");
    expect(again).toBe(first);
    expect(otherTpp).not.toBe(first);
    const crossed = await read("/v1/accounts", { "PSU-ID": first! }, OTHER_TPP);
    expect(crossed.status).toBe(401);
  });

  it("reaches only the accounts the PSU chose; another of the PSU's accounts asks for consent", async () => {
    const [chosen, left] = kari.accounts;
    const { params } = await grant(ola); // another PSU's consent must not widen Kari's
    expect(params.get("psu-id")).toMatch(UUID);
    const kariGrant = await grant(kari, { accounts: [chosen!.resourceId], tpp: "PSDNO-FSA-TPPC" });
    const psu = { "PSU-ID": kariGrant.params.get("psu-id")! };
    const list = await read("/v1/accounts", psu, "PSDNO-FSA-TPPC");
    expect((list.json as { accounts: { resourceId: string }[] }).accounts.map((a) => a.resourceId)).toEqual([
      chosen!.resourceId,
    ]);
    expect((await read(`/v1/accounts/${chosen!.resourceId}/balances`, psu, "PSDNO-FSA-TPPC")).status).toBe(
      200,
    );
    const other = await read(`/v1/accounts/${left!.resourceId}/balances`, psu, "PSDNO-FSA-TPPC");
    expect(other.status).toBe(401);
    expect(code(other.json)).toBe("CONSENT_INVALID");
    expect((other.json as { _links: { scaRedirect: { href: string } } })._links.scaRedirect.href).toContain(
      "/sca/",
    );
  });

  it("lets a corporate PSU choose the agreement; PSU-Corporate-ID is then required (SPEC 1.8, 5.12, 7)", async () => {
    const accountant = nordvik.agreements[1]!; // grants one of the two accounts
    const { params } = await grant(nordvik, { agreement: accountant.id, accounts: accountant.engagements });
    expect(params.get("context")).toBe("CORPORATE");
    const psuId = params.get("psu-id")!;
    const corporateId = params.get("psu-corporate-id")!;
    expect(corporateId).toMatch(UUID);
    expect((await read("/v1/accounts", { "PSU-ID": psuId })).status).toBe(400);
    const list = await read("/v1/accounts", { "PSU-ID": psuId, "PSU-Corporate-ID": corporateId });
    expect((list.json as { accounts: { resourceId: string }[] }).accounts.map((a) => a.resourceId)).toEqual(
      accountant.engagements,
    );
    const agreements = await read("/v1/agreements", { "PSU-ID": psuId });
    expect(agreements.status).toBe(200);
    const listed = (agreements.json as { agreements: { id: string; corporateId: string }[] }).agreements;
    expect(listed.map((a) => a.id)).toEqual(nordvik.agreements.map((a) => a.id));
    expect(listed.find((a) => a.id === accountant.id)!.corporateId).toBe(corporateId);
    // The other agreement's context has no consent yet: a new consent flow runs.
    const other = listed.find((a) => a.id !== accountant.id)!;
    expect(
      (await read("/v1/accounts", { "PSU-ID": psuId, "PSU-Corporate-ID": other.corporateId })).status,
    ).toBe(401);
  });

  it("refuses, on the page, an account outside the chosen agreement", async () => {
    const accountant = nordvik.agreements[1]!;
    const outside = nordvik.accounts.find((a) => !accountant.engagements.includes(a.resourceId))!;
    await expect(
      grant(nordvik, { agreement: accountant.id, accounts: [outside.resourceId] }),
    ).rejects.toThrow(/SCA form answered 400.*does not cover.*Driftskonto/s);
  });

  it("sends a cancelled SCA back with the failure parameters; the consent is rejected", async () => {
    for (const cancel of ["at-identify", "after-identify"] as const) {
      const started = await startConsent();
      const walk = await walkSca(started.json._links.scaRedirect!.href, {
        identity: kari.customerNumber,
        cancel,
      });
      const params = walk.redirect.searchParams;
      expect(Object.fromEntries(params)).toMatchObject({
        system: "sandbox-sca",
        status: "400",
        code: "CANCELLED",
      });
      expect(params.get("message")).toMatch(/cancelled/);
      expect(params.has("psu-id")).toBe(false);
      const status = await running.call(started.json._links.status!.href, { headers: tppHeaders() });
      expect(status.json).toEqual({ consentStatus: "rejected" });
    }
  });

  it("turns reads into 401 with a new scaRedirect once the PSU revokes the consent with the bank", async () => {
    const { params, consentId } = await grant(ola, { tpp: "PSDNO-FSA-TPPD" });
    const psu = { "PSU-ID": params.get("psu-id")! };
    expect((await read("/v1/accounts", psu, "PSDNO-FSA-TPPD")).status).toBe(200);
    const revoke = (tpp: string) =>
      running.call(`/v1/sandbox/consents/${consentId}/revoke`, {
        method: "POST",
        headers: { "X-TPP-Organization-Id": tpp },
      });
    // Another TPP cannot: the consent is not in its room.
    expect((await revoke("PSDNO-FSA-OTHER")).status).toBe(404);
    expect((await read("/v1/accounts", psu, "PSDNO-FSA-TPPD")).status).toBe(200);
    const revoked = await revoke("PSDNO-FSA-TPPD");
    expect(revoked.json).toMatchObject({ consentStatus: "revokedByPsu" });
    const after = await read("/v1/accounts", psu, "PSDNO-FSA-TPPD");
    expect(after.status).toBe(401);
    expect(code(after.json)).toBe("CONSENT_INVALID");
    expect((after.json as { _links: { scaRedirect: { href: string } } })._links.scaRedirect.href).toContain(
      "/sca/",
    );
  });
});

describe("time rules (SPEC 5.15, 8)", () => {
  it.each([
    ["same session within the hour: valid at once, no new SCA", "s-1", 59 * 60_000, "valid"],
    ["same session after the hour: a new SCA", "s-1", 61 * 60_000, "received"],
    ["a new session id: a new SCA", "s-2", 60_000, "received"],
  ])("%s", async (_what, session, later, expected) => {
    const tpp = `PSDNO-FSA-SESSION-${session}-${later}`;
    const { params } = await grant(kari, { session: "s-1", tpp });
    now = NOW + later;
    const again = await startConsent({ "PSU-ID": params.get("psu-id")!, "TPP-Session-ID": session }, tpp);
    expect(again.json.consentStatus).toBe(expected);
    expect("scaRedirect" in again.json._links).toBe(expected !== "valid");
  });

  it.each([
    ["attended, 200 days after SCA", 200, "true", 200],
    ["unattended, 179 days after SCA", 179, "false", 200],
    ["unattended, 181 days after SCA: renew SCA", 181, "false", 401],
  ])("%s", async (_what, days, present, status) => {
    const tpp = `PSDNO-FSA-RENEWAL-${days}-${present}`;
    const { params } = await grant(kari, { tpp });
    now = NOW + days * DAY;
    const answer = await read(
      "/v1/accounts",
      { "PSU-ID": params.get("psu-id")!, "X-PSU-Present": present },
      tpp,
    );
    expect(answer.status).toBe(status);
    if (status === 401) expect(code(answer.json)).toBe("CONSENT_EXPIRED");
  });
});

describe("payment authorisation by redirect (SPEC 2.4, 3, 7)", () => {
  async function newPayment(amount = "10.00") {
    const debtor = kari.accounts[0]!.bban;
    const created = await running.call("/v1/payments/norwegian-domestic-credit-transfers", {
      method: "POST",
      headers: { ...tppHeaders(), "content-type": "application/json" },
      body: JSON.stringify({
        instructedAmount: { amount, currency: "NOK" },
        debtorAccount: { bban: debtor },
        creditorAccount: { bban: ola.accounts[0]!.bban },
        creditorName: "Ola Fjellheim",
        remittanceInformationUnstructured: `sca ${Math.random()}`,
      }),
    });
    expect(created.status).toBe(201);
    const links = (created.json as { _links: Record<string, { href: string }> })._links;
    const started = await running.call(links.startAuthorisation!.href, {
      method: "POST",
      headers: tppHeaders(),
    });
    expect(started.status).toBe(201);
    const authorisation = started.json as { scaStatus: string; _links: Record<string, { href: string }> };
    expect(authorisation.scaStatus).toBe("RECEIVED");
    return { links, authorisation };
  }

  it.each([
    ["the debtor's owner approves", () => kari, {}, "ACCP", "FINALISED"],
    ["another customer approves", () => ola, {}, "RJCT", "FAILED"],
    ["the PSU cancels", () => kari, { cancel: "after-identify" as const }, "RJCT", "FAILED"],
  ])("%s → payment %s, authorisation %s", async (_what, who, extra, transactionStatus, scaStatus) => {
    const { links, authorisation } = await newPayment();
    const walk = await walkSca(authorisation._links.scaRedirect!.href, {
      identity: who().customerNumber,
      ...extra,
    });
    if (scaStatus === "FINALISED") {
      expect(walk.redirect.searchParams.get("psu-id")).toMatch(UUID);
      expect(walk.pages.at(-1)).toContain("10.00 NOK");
    } else {
      expect(walk.redirect.searchParams.get("code")).toBe("PAYMENT_FAILED");
    }
    const status = await running.call(links.status!.href, { headers: tppHeaders() });
    expect((status.json as { transactionStatus: string }).transactionStatus).toBe(transactionStatus);
    const sca = await running.call(authorisation._links.scaStatus!.href, { headers: tppHeaders() });
    expect((sca.json as { scaStatus: string }).scaStatus).toBe(scaStatus);
  });
});

describe("signing baskets (SPEC 3.1, 4.1, 7)", () => {
  async function payment(debtor: string) {
    const created = await running.call("/v1/payments/norwegian-domestic-credit-transfers", {
      method: "POST",
      headers: { ...tppHeaders(), "content-type": "application/json" },
      body: JSON.stringify({
        instructedAmount: { amount: "5.00", currency: "NOK" },
        debtorAccount: { bban: debtor },
        creditorAccount: { bban: "12345678903" },
        creditorName: "Per Hansen",
        remittanceInformationUnstructured: `basket ${Math.random()}`,
      }),
    });
    return (created.json as { paymentId: string }).paymentId;
  }
  const basketHeaders = {
    "x-accept-fix": "amount-as-string",
    "TPP-Session-ID": "basket-session",
    "PSU-ID": "ignored-until-sca",
    "PSU-IP-Address": "192.0.2.10",
  };
  async function basket(ids: string[]) {
    const created = await running.call("/v1/signing-baskets", {
      method: "POST",
      headers: { ...tppHeaders(), "content-type": "application/json" },
      body: JSON.stringify({ paymentIds: ids }),
    });
    return created as typeof created & {
      json: { basketId: string; transactionStatus: string; _links: Record<string, { href: string }> };
    };
  }

  it.each([
    [["ACCP", "ACCP"], "ACCP"],
    [["ACSC", "ACCP"], "ACCP"],
    [["ACSC", "ACSC"], "ACSC"],
    [["ACCP", "RCVD"], "RCVD"],
    [["RCVD", "CANC"], "CANC"],
    [["ACSC", "RJCT", "CANC"], "RJCT"],
  ] as const)("the status of a basket of %j is %s (SPEC 3.1: the worst)", (statuses, expected) => {
    expect(worstStatus(statuses)).toBe(expected);
  });

  it.each([
    ["without x-accept-fix", { "x-accept-fix": "" }, /amount-as-string/],
    ["without TPP-Session-ID", { "TPP-Session-ID": "" }, /TPP-Session-ID/],
    ["without PSU-IP-Address", { "PSU-IP-Address": "" }, /PSU-IP-Address/],
  ])("refuses the authorisation start %s", async (_what, change, text) => {
    const created = await basket([await payment(kari.accounts[0]!.bban)]);
    const headers = Object.fromEntries(
      Object.entries({ ...tppHeaders(), ...basketHeaders, ...change }).filter(([, v]) => v !== ""),
    );
    const answer = await running.call(created.json._links.startAuthorisation!.href, {
      method: "POST",
      headers,
    });
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(text);
  });

  it("authorises all its payments with one SCA; each keeps its own status, the basket shows the worst", async () => {
    const mine = await payment(kari.accounts[0]!.bban);
    const notMine = await payment(ola.accounts[0]!.bban);
    const created = await basket([mine, notMine]);
    expect(created.status).toBe(201);
    expect(created.json.transactionStatus).toBe("RCVD");
    const started = await running.call(created.json._links.startAuthorisation!.href, {
      method: "POST",
      headers: { ...tppHeaders(), ...basketHeaders },
    });
    expect(started.status).toBe(201);
    const links = (started.json as { _links: Record<string, { href: string }> })._links;
    const walk = await walkSca(links.scaRedirect!.href, { identity: kari.customerNumber });
    expect(walk.redirect.searchParams.get("psu-id")).toMatch(UUID);
    const status = (id: string) =>
      running.call(`/v1/payments/norwegian-domestic-credit-transfers/${id}/status`, {
        headers: tppHeaders(),
      });
    expect(((await status(mine)).json as { transactionStatus: string }).transactionStatus).toBe("ACCP");
    expect(((await status(notMine)).json as { transactionStatus: string }).transactionStatus).toBe("RJCT");
    const basketStatus = await running.call(created.json._links.status!.href, { headers: tppHeaders() });
    expect(basketStatus.json).toEqual({ transactionStatus: "RJCT" });
    expect(
      ((await running.call(links.scaStatus!.href, { headers: tppHeaders() })).json as { scaStatus: string })
        .scaStatus,
    ).toBe("FINALISED");
  });

  it("refuses an unknown or repeated payment id, and another TPP's payment", async () => {
    const mine = await payment(kari.accounts[0]!.bban);
    expect((await basket([mine, mine])).status).toBe(400);
    expect((await basket(["no-such-payment"])).status).toBe(400);
    const other = await running.call("/v1/signing-baskets", {
      method: "POST",
      headers: { ...tppHeaders({}, OTHER_TPP), "content-type": "application/json" },
      body: JSON.stringify({ paymentIds: [mine] }),
    });
    expect(other.status).toBe(400);
  });
});

describe("the page itself", () => {
  it("refuses a form without the page's cookie or with another token (CSRF)", async () => {
    const started = await startConsent();
    const link = started.json._links.scaRedirect!.href;
    const html = await (await fetch(link)).text();
    const token = /name="token" value="([^"]+)"/.exec(html)![1]!;
    const post = (headers: Record<string, string>, sentToken: string) =>
      fetch(link, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams({
          token: sentToken,
          action: "identify",
          identity: kari.customerNumber,
          code: SANDBOX_ONE_TIME_CODE,
        }).toString(),
      });
    expect((await post({}, token)).status).toBe(403);
    expect((await post({ cookie: `sca_token=${token}` }, "x".repeat(token.length))).status).toBe(403);
    expect((await post({ cookie: `sca_token=${token}` }, token)).status).toBe(303);
  });

  it("preselects X-PSU-IDENTITY, shows X-PSU-AuthMethod-Preferred and escapes what it echoes", async () => {
    const started = await startConsent({
      "X-PSU-IDENTITY": '"><script>x</script>',
      "X-PSU-AuthMethod-Preferred": "NATIONALEID_MOBILE",
    });
    const html = await (await fetch(started.json._links.scaRedirect!.href)).text();
    expect(html).not.toContain("biometric");
    expect(html).toContain('value="&#34;&#62;&#60;script&#62;x&#60;/script&#62;"');
    expect(html).not.toContain("<script>");
    expect(html).toContain("NATIONALEID_MOBILE");
  });

  it("says so when the TPP asked for the app's biometric flow (TPP-Redirect-Preferred: false)", async () => {
    const started = await startConsent({ "TPP-Redirect-Preferred": "false" });
    expect(await (await fetch(started.json._links.scaRedirect!.href)).text()).toContain("biometric flow");
    const wrong = await startConsent({ "TPP-Redirect-Preferred": "maybe" });
    expect(wrong.status).toBe(400);
  });

  it("answers an unknown identification number on the page, 400, and an unknown link 404", async () => {
    await expect(
      walkSca((await startConsent()).json._links.scaRedirect!.href, { identity: "00000000000" }),
    ).rejects.toThrow(/SCA form answered 400/);
    expect((await fetch(`${running.listener.scaUrl}/sca/unknown`)).status).toBe(404);
  });
});

describe("the page as the bank's customer reads it", () => {
  /** The page's HTML and its token and cookie, as a browser holds them. */
  async function open(link: string) {
    const response = await fetch(link);
    const html = await response.text();
    const cookie = response.headers.get("set-cookie")?.split(";")[0] ?? "";
    const token = /name="token" value="([^"]+)"/.exec(html)?.[1] ?? "";
    return { status: response.status, html, cookie, token };
  }
  /** Posts the page's form with `fields`, with the token and cookie of `session` (default: a fresh look at the page). */
  async function submit(
    link: string,
    fields: Record<string, string>,
    session?: { cookie: string; token: string },
  ) {
    const { cookie, token } = session ?? (await open(link));
    const response = await fetch(link, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ token, ...fields }).toString(),
    });
    return {
      status: response.status,
      location: response.headers.get("location"),
      html: await response.text(),
    };
  }
  const visibleText = (html: string) => html.replace(/<style>[\s\S]*?<\/style>/, "").replace(/<[^>]+>/g, " ");

  it("names the provider by its registered name, says no developer words and tells the one-time code", async () => {
    const named = await startConsent({ "X-TPP-Name": encodeURIComponent("Fjordpenger Ødegård AS") });
    const { html } = await open(named.json._links.scaRedirect!.href);
    expect(html).toContain("Fjordpenger Ødegård AS asks to read your accounts.");
    expect(html).toContain(`registered as ${TPP}`);
    expect(html).toContain('<label for="code">One-time code</label>');
    expect(html).toContain(`the one-time code is always <strong>${SANDBOX_ONE_TIME_CODE}</strong>`);
    for (const word of ["mocked", "customerNumber", "sandbox customer", "FINALISED", "GET /v1"])
      expect(visibleText(html)).not.toContain(word);
    // Called without the gateway's name header: the register id stands in.
    const unnamed = await startConsent();
    expect((await open(unnamed.json._links.scaRedirect!.href)).html).toContain(`${TPP} asks to read`);
  });

  it("reads the name from the configured identity header, not the default one", async () => {
    const renamed = await startBank({ clock: () => now, identityHeaders: { name: "X-Provider-Name" } });
    try {
      const started = await renamed.call("/v1/bank-offered-consents", {
        method: "POST",
        headers: tppHeaders({ "X-Provider-Name": "Configured%20AS", "X-TPP-Name": "Spoofed%20AS" }),
        body: "{}",
      });
      const link = (started.json as { _links: { scaRedirect: { href: string } } })._links.scaRedirect.href;
      const { html } = await open(link);
      expect(html).toContain("Configured AS asks to read your accounts.");
      expect(html).not.toContain("Spoofed");
    } finally {
      await renamed.listener.close();
    }
  });

  it("refuses a wrong one-time code with what to type, and stops the authorisation after the third", async () => {
    const started = await startConsent();
    const link = started.json._links.scaRedirect!.href;
    const session = await open(link);
    for (const [code, tries] of [
      ["000000", "2 more tries"],
      ["", "one more try"],
    ] as const) {
      const refused = await submit(link, { action: "identify", identity: kari.customerNumber, code });
      expect(refused.status).toBe(400);
      expect(refused.html).toContain(tries);
      expect(refused.html).toContain(`the code is ${SANDBOX_ONE_TIME_CODE}`);
      expect(refused.html).toContain(`value="${kari.customerNumber}"`);
    }
    const third = await submit(link, { action: "identify", identity: kari.customerNumber, code: "654321" });
    expect(third.status).toBe(303);
    const back = new URL(third.location!).searchParams;
    expect(Object.fromEntries(back)).toMatchObject({ code: "PSU_CREDENTIALS_INVALID", status: "400" });
    const status = await running.call(`/v1/bank-offered-consents/${started.json.consentId}/status`, {
      headers: tppHeaders(),
    });
    expect(status.json).toEqual({ consentStatus: "rejected" });
    expect((await open(link)).html).toContain("Nothing was done: the one-time code was wrong 3 times.");
    // The right code no longer helps.
    expect(
      (
        await submit(
          link,
          { action: "identify", identity: kari.customerNumber, code: SANDBOX_ONE_TIME_CODE },
          session,
        )
      ).status,
    ).toBe(409);
  });

  it("shows the consent's access, validity date and frequency, accounts by name, and GET consent says the same", async () => {
    const { consentId, walk } = await grant(kari);
    const consentPage = walk.pages.at(-1)!;
    expect(consentPage).toContain("<dt>Access</dt><dd>Account details, balances and transactions");
    // NOW is 2026-08-13: 180 days on is 2027-02-09 (SPEC 8).
    expect(consentPage).toContain("<dt>Valid until</dt><dd>9 February 2027");
    expect(consentPage).toContain("<dt>How often</dt><dd>Up to 4 times a day");
    for (const account of kari.accounts) expect(consentPage).toContain(account.name);
    const consent = await running.call(`/v1/bank-offered-consents/${consentId}`, { headers: tppHeaders() });
    expect(consent.json).toMatchObject({
      validUntil: "2027-02-09",
      frequencyPerDay: 4,
      recurringIndicator: true,
    });
    const corporate = await startConsent();
    const identified = await walkSca(corporate.json._links.scaRedirect!.href, {
      identity: nordvik.customerNumber,
    });
    const agreementsPage = identified.pages.at(-1)!;
    const [operating, tax] = nordvik.accounts;
    expect(agreementsPage).toContain(`${nordvik.agreements[0]!.name}: ${operating!.name}, ${tax!.name}`);
  });

  it("says in words what happened when a finished link is opened again", async () => {
    const started = await startConsent({ "X-TPP-Name": "Fjordpenger%20AS" });
    const href = started.json._links.scaRedirect!.href;
    await walkSca(href, { identity: kari.customerNumber });
    const done = await open(href);
    expect(done.html).toContain("Done: you allowed Fjordpenger AS to read the accounts you chose.");
    expect(visibleText(done.html)).not.toMatch(/FINALISED|FAILED/);
    const cancelled = await startConsent();
    await walkSca(cancelled.json._links.scaRedirect!.href, {
      identity: kari.customerNumber,
      cancel: "after-identify",
    });
    expect((await open(cancelled.json._links.scaRedirect!.href)).html).toContain(
      "Nothing was done: you cancelled it.",
    );
  });

  it("expires a link after 15 minutes by default: 410 with a page that says so, and the authorisation fails", async () => {
    const started = await startConsent();
    const link = started.json._links.scaRedirect!.href;
    now = NOW + 15 * 60_000 - 1;
    expect((await open(link)).status).toBe(200);
    now = NOW + 15 * 60_000;
    const gone = await open(link);
    expect(gone.status).toBe(410);
    expect(gone.html).toContain(
      "This link has expired: a link to the bank&#39;s page can be used for 15 minutes.",
    );
    const status = await running.call(`/v1/bank-offered-consents/${started.json.consentId}/status`, {
      headers: tppHeaders(),
    });
    expect(status.json).toEqual({ consentStatus: "rejected" });
  });

  it("takes its link lifetime from scaLinkTtlSeconds, and refuses a form sent after it", async () => {
    const short = await startBank({ clock: () => now, scaLinkTtlSeconds: 90 });
    try {
      const started = await short.call("/v1/bank-offered-consents", {
        method: "POST",
        headers: tppHeaders(),
        body: "{}",
      });
      const link = (started.json as { _links: { scaRedirect: { href: string } } })._links.scaRedirect.href;
      const { cookie, token } = await open(link);
      now = NOW + 90_000;
      const late = await fetch(link, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie },
        body: new URLSearchParams({
          token,
          action: "identify",
          identity: kari.customerNumber,
          code: SANDBOX_ONE_TIME_CODE,
        }).toString(),
      });
      expect(late.status).toBe(410);
      expect(await late.text()).toContain("can be used for 90 seconds");
    } finally {
      await short.listener.close();
    }
    expect(() => createSandboxBank({ gatewaySecret: TEST_GATEWAY_SECRET, scaLinkTtlSeconds: 0 })).toThrow(
      /scaLinkTtlSeconds/,
    );
  });

  it("lets a corporate PSU choose the agreement a payment is approved under; one not covering the account is refused", async () => {
    const [operating, tax] = nordvik.accounts;
    const [full, accountant] = nordvik.agreements;
    async function corporatePayment(debtor: string) {
      const created = await running.call("/v1/payments/norwegian-domestic-credit-transfers", {
        method: "POST",
        headers: { ...tppHeaders(), "content-type": "application/json" },
        body: JSON.stringify({
          instructedAmount: { amount: "42.00", currency: "NOK" },
          debtorAccount: { bban: debtor },
          creditorAccount: { bban: "12345678903" },
          creditorName: "Per Hansen",
          remittanceInformationUnstructured: `agreement ${Math.random()}`,
        }),
      });
      const links = (created.json as { _links: Record<string, { href: string }> })._links;
      const started = await running.call(links.startAuthorisation!.href, {
        method: "POST",
        headers: tppHeaders(),
      });
      return (started.json as { _links: Record<string, { href: string }> })._links.scaRedirect!.href;
    }
    // The operating account: both agreements cover it; the PSU takes the second, not the first.
    const walk = await walkSca(await corporatePayment(operating!.bban), {
      identity: nordvik.customerNumber,
      agreement: accountant!.id,
    });
    const paymentPage = walk.pages.at(-1)!;
    expect(paymentPage).toContain(`${operating!.name} (${operating!.bban})`);
    expect(paymentPage).toContain("Company agreement to approve under");
    const agreements = await running.call("/v1/agreements", {
      headers: { ...tppHeaders(), "PSU-ID": walk.redirect.searchParams.get("psu-id")! },
    });
    const listed = (agreements.json as { agreements: { id: string; corporateId: string }[] }).agreements;
    expect(walk.redirect.searchParams.get("psu-corporate-id")).toBe(
      listed.find((each) => each.id === accountant!.id)!.corporateId,
    );
    expect(walk.redirect.searchParams.get("psu-corporate-id")).not.toBe(
      listed.find((each) => each.id === full!.id)!.corporateId,
    );
    // The tax account: only the first agreement covers it, and the page preselects that one.
    const taxLink = await corporatePayment(tax!.bban);
    await expect(
      walkSca(taxLink, { identity: nordvik.customerNumber, agreement: accountant!.id }),
    ).rejects.toThrow(
      new RegExp(`SCA form answered 400.*${accountant!.name} does not cover ${tax!.name}`, "s"),
    );
    const preselected = await walkSca(taxLink, { identity: nordvik.customerNumber });
    expect(preselected.redirect.searchParams.get("context")).toBe("CORPORATE");
  });
});
