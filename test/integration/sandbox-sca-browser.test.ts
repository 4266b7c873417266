/**
 * A TPP's journey through the gateway to the sandbox bank, with the PSU in a real browser
 * (Debian's Chromium, driven by playwright-core, JavaScript off: the page must work without it):
 * consent → SCA page (the TPP's registered name, number and one-time code, the consent's terms)
 * → redirect back with the SPEC 2.6 parameters → accounts and transactions; a wrong one-time code;
 * a payment → SCA page → status; a corporate PSU choosing an agreement for a consent and for a
 * payment; a cancelled SCA → the failure parameters; a finished link that says what happened; an
 * expired link. `UPDATE_SCREENSHOTS=1` writes the SCA page's screenshots docs/sandbox.md shows.
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Customer, createSandboxBank, SANDBOX_ONE_TIME_CODE } from "@psd2-gateway/sandbox-bank";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startDemoBank } from "../../src/cli/start.js";
import { describeWithBrowser, launchBrowser } from "../helpers/browser.js";
import {
  type CallResult,
  signedCall,
  startTestGateway,
  type TestGateway,
} from "../helpers/gateway-fixture.js";

const SCREENSHOT = join(import.meta.dirname, "../../docs/sandbox-sca-page.png");
const CONSENT_SCREENSHOT = join(import.meta.dirname, "../../docs/sandbox-sca-consent.png");
const screenshots = process.env["UPDATE_SCREENSHOTS"] === "1";

describeWithBrowser("the sandbox's SCA in a real browser, through the gateway", () => {
  let customers: readonly Customer[];
  let gw: TestGateway;
  let tpp: Server;
  let callback: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** What the TPP's callback received, by path. */
  const arrivals = new Map<string, URLSearchParams>();
  /** Moves the bank's clock (not the gateway's): links expire by the bank's. */
  let bankClockAhead = 0;

  beforeAll(async () => {
    // The demo bank as `npm start` runs it: behind the gateway, its API reached with the gateway's
    // secret; its clock movable (links expire by the bank's clock, not the gateway's).
    customers = createSandboxBank({ gatewaySecret: "s".repeat(32) }).data.customers;
    gw = await startTestGateway({
      backendUrl: "sandbox",
      startDemoBank: (request) => startDemoBank(request, () => Date.now() + bankClockAhead),
      config: { sandbox: { port: 0 } },
    });
    tpp = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://tpp.local");
      arrivals.set(url.pathname, url.searchParams);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!doctype html><title>TPP</title><p>Back at the TPP.</p>");
    });
    await new Promise<void>((resolve) => tpp.listen(0, "127.0.0.1", resolve));
    callback = `http://127.0.0.1:${(tpp.address() as AddressInfo).port}`;
    browser = await launchBrowser();
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 640, height: 720 } });
    page = await context.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.close(0);
    await new Promise((resolve) => tpp?.close(resolve));
  });

  const kari = () => customers[0]!;
  const nordvik = () => customers[3]!;

  /** A signed call by TPP A through the gateway, its PSU returning to `/back` on the TPP. */
  function call(method: string, target: string, headers: Record<string, string> = {}, body?: unknown) {
    return signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method,
      target,
      headers: { "TPP-Redirect-URI": `${callback}${headers["x-back"] ?? "/back"}`, ...withoutBack(headers) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }
  const withoutBack = (headers: Record<string, string>) =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => name !== "x-back"));
  const link = (r: CallResult, name: string) =>
    (r.json._links as Record<string, { href: string }>)[name]!.href;

  /** Number and one-time code typed, Continue pressed. */
  async function identify(identity: string, code = SANDBOX_ONE_TIME_CODE): Promise<void> {
    await page.getByLabel(/National identification number/).fill(identity);
    await page.getByLabel("One-time code").fill(code);
    await page.getByRole("button", { name: "Continue" }).click();
  }

  /** The PSU at the page: identifies, then presses `finish` (after `choose`). */
  async function atScaPage(
    scaRedirect: string,
    identity: string,
    finish: "Grant access" | "Approve" | "Cancel",
    choose?: (page: Page) => Promise<void>,
  ): Promise<void> {
    await page.goto(scaRedirect);
    await identify(identity);
    await page.getByText(/Signed in as/).waitFor();
    await choose?.(page);
    await page.getByRole("button", { name: finish }).click();
    await page.waitForURL(`${callback}/**`);
  }

  it("consent → SCA page → back with psu-id, tpp-session-id and context → the chosen account's data", async () => {
    const started = await call(
      "POST",
      "/v1/bank-offered-consents",
      { "TPP-Session-ID": "journey-1", "x-back": "/consent" },
      {},
    );
    expect(started.status, started.text).toBe(201);
    const [current, savings] = kari().accounts;

    await page.goto(link(started, "scaRedirect"));
    // The SCA page itself, not the bank's error page (same heading, a role=alert text instead).
    expect(await page.title()).toBe("Sandbox Bank: strong customer authentication");
    expect(await page.getByRole("heading", { level: 1 }).innerText()).toBe("Sandbox Bank");
    expect(await page.getByRole("alert").count()).toBe(0);
    // The provider by the name the register gives it (through the gateway's identity headers).
    const { name, organizationId } = gw.pki.tppA;
    await page.getByText(`${name} asks to read your accounts.`).waitFor();
    await page.getByText(`Provider: ${name}, registered as ${organizationId}.`).waitFor();
    // Words for a customer: the code is asked for, and the help line says which one.
    await page.getByText(`the one-time code is always ${SANDBOX_ONE_TIME_CODE}`).waitFor();
    const words = await page.locator("main").innerText();
    for (const developerWord of ["mocked", "customerNumber", "sandbox customer"])
      expect(words).not.toContain(developerWord);
    await page.getByLabel(/National identification number/).fill(kari().customerNumber);
    await page.getByLabel("One-time code").fill(SANDBOX_ONE_TIME_CODE);
    if (screenshots) await page.screenshot({ path: SCREENSHOT, fullPage: true });
    await page.getByRole("button", { name: "Continue" }).click();
    // The consent's terms (SPEC 1.9, 8) and the accounts by name.
    const terms = await page.locator("dl.terms").innerText();
    expect(terms).toMatch(/Access\s+Account details, balances and transactions/);
    expect(terms).toMatch(/Valid until\s+\d{1,2} [A-Z][a-z]+ \d{4}/);
    expect(terms).toMatch(/How often\s+Up to 4 times a day/);
    if (screenshots) await page.screenshot({ path: CONSENT_SCREENSHOT, fullPage: true });
    await page.getByLabel(`${savings!.name} (${savings!.bban}, ${savings!.currency})`).uncheck();
    await page.getByRole("button", { name: "Grant access" }).click();
    await page.waitForURL(`${callback}/consent**`);
    // The link opened again says in words what happened.
    await page.goto(link(started, "scaRedirect"));
    await page.getByText(`Done: you allowed ${name} to read the accounts you chose.`).waitFor();
    expect(await page.locator("main").innerText()).not.toMatch(/FINALISED/);

    const back = arrivals.get("/consent")!;
    expect(back.get("psu-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(back.get("tpp-session-id")).toBe("journey-1");
    expect(back.get("context")).toBe("PRIVATE");
    const psu = { "PSU-ID": back.get("psu-id")! };
    const accounts = await call("GET", "/v1/accounts", psu);
    expect(accounts.status, accounts.text).toBe(200);
    expect((accounts.json.accounts as { resourceId: string }[]).map((a) => a.resourceId)).toEqual([
      current!.resourceId,
    ]);
    const transactions = await call(
      "GET",
      `/v1/accounts/${current!.resourceId}/transactions?bookingStatus=booked`,
      psu,
    );
    expect(transactions.status, transactions.text).toBe(200);
    expect((transactions.json.transactions as { booked: unknown[] }).booked.length).toBeGreaterThan(0);
    const notChosen = await call("GET", `/v1/accounts/${savings!.resourceId}/balances`, psu);
    expect(notChosen.status).toBe(401);
    expect(notChosen.json.tppMessages?.[0]?.code).toBe("CONSENT_INVALID");
  });

  it("payment → SCA page shows amount and payee → approved → ACCP", async () => {
    const created = await call(
      "POST",
      "/v1/payments/norwegian-domestic-credit-transfers",
      {},
      {
        instructedAmount: { amount: "123.45", currency: "NOK" },
        debtorAccount: { bban: kari().accounts[0]!.bban },
        creditorAccount: { bban: "12345678903" },
        creditorName: "Per Hansen",
        remittanceInformationUnstructured: "browser journey",
      },
    );
    expect(created.status, created.text).toBe(201);
    const authorisation = await call("POST", link(created, "startAuthorisation"), { "x-back": "/payment" });
    expect(authorisation.status, authorisation.text).toBe(201);
    await atScaPage(link(authorisation, "scaRedirect"), kari().customerNumber, "Approve", async (p) => {
      await p.getByText("123.45 NOK").waitFor();
      await p.getByText("Per Hansen (12345678903)").waitFor();
    });
    expect(arrivals.get("/payment")!.get("psu-id")).toMatch(/^[0-9a-f-]{36}$/);
    const status = await call("GET", link(created, "status"));
    expect(status.json.transactionStatus).toBe("ACCP");
    const sca = await call("GET", link(authorisation, "scaStatus"));
    expect(sca.json.scaStatus).toBe("FINALISED");
  });

  it("a corporate PSU chooses the agreement: back with psu-corporate-id and context CORPORATE", async () => {
    const started = await call("POST", "/v1/bank-offered-consents", { "x-back": "/corporate" }, {});
    const agreement = nordvik().agreements[1]!;
    await atScaPage(link(started, "scaRedirect"), nordvik().customerNumber, "Grant access", async (p) => {
      await p.getByLabel(new RegExp(agreement.name)).check();
      // Only the agreement's accounts may be chosen.
      for (const account of nordvik().accounts) {
        const box = p.getByLabel(`${account.name} (${account.bban}, ${account.currency})`);
        if (agreement.engagements.includes(account.resourceId)) await box.check();
        else await box.uncheck();
      }
    });
    const back = arrivals.get("/corporate")!;
    expect(back.get("context")).toBe("CORPORATE");
    const psu = { "PSU-ID": back.get("psu-id")!, "PSU-Corporate-ID": back.get("psu-corporate-id")! };
    const accounts = await call("GET", "/v1/accounts", psu);
    expect((accounts.json.accounts as { resourceId: string }[]).map((a) => a.resourceId)).toEqual(
      agreement.engagements,
    );
  });

  it("a cancelled SCA returns the failure parameters (SPEC 2.6, 7)", async () => {
    const created = await call(
      "POST",
      "/v1/payments/norwegian-domestic-credit-transfers",
      {},
      {
        instructedAmount: { amount: "9.99", currency: "NOK" },
        debtorAccount: { bban: kari().accounts[0]!.bban },
        creditorAccount: { bban: "12345678903" },
        creditorName: "Per Hansen",
        remittanceInformationUnstructured: "cancelled journey",
      },
    );
    const authorisation = await call("POST", link(created, "startAuthorisation"), { "x-back": "/cancelled" });
    await atScaPage(link(authorisation, "scaRedirect"), kari().customerNumber, "Cancel");
    const back = arrivals.get("/cancelled")!;
    expect(Object.fromEntries(back)).toMatchObject({
      system: "sandbox-sca",
      status: "400",
      code: "PAYMENT_FAILED",
    });
    expect(back.get("message")).toMatch(/did not approve|cancelled/);
    const status = await call("GET", link(created, "status"));
    expect(status.json.transactionStatus).toBe("RJCT");
    await page.goto(link(authorisation, "scaRedirect"));
    await page.getByText("Nothing was done: you cancelled it.").waitFor();
  });

  it("a wrong one-time code is refused with what to type; the right one goes on", async () => {
    const started = await call("POST", "/v1/bank-offered-consents", { "x-back": "/code" }, {});
    await page.goto(link(started, "scaRedirect"));
    await identify(kari().customerNumber, "999999");
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.innerText()).toBe(
      `The one-time code is not right: 2 more tries before this authorisation is stopped. In the test environment the code is ${SANDBOX_ONE_TIME_CODE}.`,
    );
    // The number stays typed; the code field is tied to the message for screen readers.
    expect(await page.getByLabel(/National identification number/).inputValue()).toBe(kari().customerNumber);
    expect(await page.getByLabel("One-time code").getAttribute("aria-describedby")).toContain("error");
    await page.getByLabel("One-time code").fill(SANDBOX_ONE_TIME_CODE);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.getByText(/Signed in as/).waitFor();
  });

  it("a corporate PSU approves a payment under the agreement it chooses, not the first", async () => {
    const [operating] = nordvik().accounts;
    const accountant = nordvik().agreements[1]!;
    const created = await call(
      "POST",
      "/v1/payments/norwegian-domestic-credit-transfers",
      {},
      {
        instructedAmount: { amount: "77.00", currency: "NOK" },
        debtorAccount: { bban: operating!.bban },
        creditorAccount: { bban: "12345678903" },
        creditorName: "Per Hansen",
        remittanceInformationUnstructured: "corporate payment journey",
      },
    );
    expect(created.status, created.text).toBe(201);
    const authorisation = await call("POST", link(created, "startAuthorisation"), { "x-back": "/corp-pay" });
    await atScaPage(link(authorisation, "scaRedirect"), nordvik().customerNumber, "Approve", async (p) => {
      await p.getByText(`${operating!.name} (${operating!.bban})`).waitFor();
      await p.getByLabel(new RegExp(accountant.name)).check();
    });
    const back = arrivals.get("/corp-pay")!;
    expect(back.get("context")).toBe("CORPORATE");
    const agreements = await call("GET", "/v1/agreements", { "PSU-ID": back.get("psu-id")! });
    const chosen = (agreements.json.agreements as { id: string; corporateId: string }[]).find(
      (each) => each.id === accountant.id,
    );
    expect(back.get("psu-corporate-id")).toBe(chosen!.corporateId);
    expect((await call("GET", link(created, "status"))).json.transactionStatus).toBe("ACCP");
  });

  it("an expired link shows a page that says so, and the authorisation has failed", async () => {
    const created = await call(
      "POST",
      "/v1/payments/norwegian-domestic-credit-transfers",
      {},
      {
        instructedAmount: { amount: "5.00", currency: "NOK" },
        debtorAccount: { bban: kari().accounts[0]!.bban },
        creditorAccount: { bban: "12345678903" },
        creditorName: "Per Hansen",
        remittanceInformationUnstructured: "expired journey",
      },
    );
    const authorisation = await call("POST", link(created, "startAuthorisation"), { "x-back": "/expired" });
    bankClockAhead = 15 * 60_000;
    try {
      const response = await page.goto(link(authorisation, "scaRedirect"));
      expect(response?.status()).toBe(410);
      await page
        .getByRole("alert")
        .getByText(/This link has expired: a link to the bank's page can be used for 15 minutes\./)
        .waitFor();
      expect(await page.getByLabel(/National identification number/).count()).toBe(0);
      expect((await call("GET", link(authorisation, "scaStatus"))).json.scaStatus).toBe("FAILED");
    } finally {
      bankClockAhead = 0;
    }
  });
});
