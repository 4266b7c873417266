/**
 * SPEC 8 through a real gateway: without the PSU present (no PSU-IP-Address) transactions are
 * readable for the last 90 days only. A transaction list must send a dateFrom inside them (refused
 * before the bank sees it, and without costing one of the 4 daily calls); a transaction's details
 * are dated from the bank's answer, which is withheld when the transaction is older. The gateway's
 * clock is fixed, so "today" and the boundary days never move during the run.
 */

import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { expectRejected, type SignedCall, signedCall, type TestGateway } from "../helpers/gateway-fixture.js";
import type { BackendBehaviour } from "../helpers/recording-backend.js";
import { UNATTENDED } from "../helpers/shared-store-gateways.js";

const NOW = Date.now();
const DAY = 24 * 3600 * 1000;

/** The UTC date `n` days before the gateway's today. */
function daysAgo(n: number): string {
  return new Date((Math.floor(NOW / DAY) - n) * DAY).toISOString().slice(0, 10);
}

function call(gw: TestGateway, target: string, extra: Partial<SignedCall> = {}) {
  return signedCall(gw, { signer: gw.pki.tppA.qseal, target, now: NOW, ...extra });
}

const unattended = (gw: TestGateway, target: string) => call(gw, target, UNATTENDED);

/** A bank answering a transaction's details (Berlin Group: { transactionsDetails: {…} }). */
function answerDetails(fields: Record<string, unknown>): BackendBehaviour {
  return (_req, res) => {
    const body = JSON.stringify({
      transactionsDetails: {
        transactionId: "t-1",
        transactionAmount: { currency: "NOK", amount: "-120.00" },
        remittanceInformationUnstructured: "private remittance text",
        ...fields,
      },
    });
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  };
}

describe("unattended transaction lists need a dateFrom within 90 days (SPEC 8)", () => {
  const env = useGatewayAndBackend({ now: () => NOW });

  it.each(["/v1/accounts/p-1/transactions", "/v1/card-accounts/p-1/transactions"])(
    "%s: dateFrom 90 days back passes, 91 days back is refused before the bank sees it",
    async (path) => {
      const { gw, backend } = env;
      const ok = await unattended(gw, `${path}?bookingStatus=booked&dateFrom=${daysAgo(90)}`);
      expect(ok.status, ok.text).toBe(200);
      expect(backend.requests).toHaveLength(1);
      expect(backend.requests[0]!.target).toBe(`${path}?bookingStatus=booked&dateFrom=${daysAgo(90)}`);

      const old = await unattended(gw, `${path}?bookingStatus=booked&dateFrom=${daysAgo(91)}`);
      expectRejected(old, {
        status: 400,
        code: "PERIOD_INVALID",
        text: [
          "without the PSU present (no PSU-IP-Address) transactions are readable for the last 90 days only",
          `send dateFrom on or after ${daysAgo(90)}; dateFrom ${daysAgo(91)} is earlier`,
        ],
      });
      expect(backend.requests).toHaveLength(1);
    },
  );

  it("refuses a list without dateFrom and says which dateFrom to send", async () => {
    const { gw, backend } = env;
    const r = await unattended(gw, "/v1/accounts/p-2/transactions?bookingStatus=booked");
    expectRejected(r, {
      status: 400,
      code: "PERIOD_INVALID",
      text: [`send dateFrom on or after ${daysAgo(90)}; this request has no dateFrom`],
    });
    expect(backend.requests).toHaveLength(0);
  });

  it("costs none of the 4 daily calls when it refuses", async () => {
    const { gw, backend } = env;
    const path = "/v1/accounts/p-3/transactions";
    for (const query of ["", "?bookingStatus=booked", `?dateFrom=${daysAgo(91)}`, "?dateFrom=2026-13-01"]) {
      expect((await unattended(gw, path + query)).status).toBe(400);
    }
    const statuses = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await unattended(gw, `${path}?dateFrom=${daysAgo(10)}`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expect(backend.requests).toHaveLength(4);
  });

  it("leaves the period to the bank when the PSU is present", async () => {
    const { gw, backend } = env;
    for (const query of ["", `?dateFrom=${daysAgo(91)}`, "?dateFrom=2019-01-01"]) {
      const r = await call(gw, `/v1/accounts/p-4/transactions${query}`);
      expect(r.status, r.text).toBe(200);
    }
    expect(backend.requests).toHaveLength(3);
    expect(backend.requests.every((r) => r.headers["x-psu-present"] === "true")).toBe(true);
  });
});

describe("unattended transaction details are withheld when older than 90 days (SPEC 8)", () => {
  const env = useGatewayAndBackend({ now: () => NOW });

  it.each(["/v1/accounts/d-1/transactions/t-1", "/v1/card-accounts/d-1/transactions/t-1"])(
    "%s: booked 90 days ago passes unchanged, 91 days ago is withheld",
    async (path) => {
      const { gw, backend } = env;
      backend.behave(answerDetails({ bookingDate: daysAgo(90), valueDate: daysAgo(92) }));
      const ok = await unattended(gw, path);
      expect(ok.status, ok.text).toBe(200);
      expect(JSON.parse(ok.text)).toMatchObject({ transactionsDetails: { bookingDate: daysAgo(90) } });
      expect(ok.headers["content-length"]).toBe(String(Buffer.byteLength(ok.text)));

      backend.behave(answerDetails({ bookingDate: daysAgo(91), valueDate: daysAgo(89) }));
      const old = await unattended(gw, path);
      expectRejected(old, {
        status: 400,
        code: "PERIOD_INVALID",
        text: [
          "without the PSU present (no PSU-IP-Address) transactions are readable for the last 90 days only",
          `this transaction's bookingDate is ${daysAgo(91)}, before ${daysAgo(90)}; read it with the PSU present`,
        ],
      });
      expect(old.text).not.toContain("private remittance text");
      expect(backend.requests).toHaveLength(2);
    },
  );

  it("dates a transaction without bookingDate by its valueDate", async () => {
    const { gw } = env;
    env.backend.behave(answerDetails({ valueDate: daysAgo(91) }));
    expectRejected(await unattended(gw, "/v1/accounts/d-2/transactions/t-1"), {
      status: 400,
      code: "PERIOD_INVALID",
      text: [`valueDate is ${daysAgo(91)}`],
    });
    env.backend.behave(answerDetails({ valueDate: daysAgo(90) }));
    expect((await unattended(gw, "/v1/accounts/d-2/transactions/t-1")).status).toBe(200);
  });

  it("passes old details on when the PSU is present", async () => {
    const { gw } = env;
    env.backend.behave(answerDetails({ bookingDate: daysAgo(400) }));
    const r = await call(gw, "/v1/accounts/d-3/transactions/t-1");
    expect(r.status, r.text).toBe(200);
    expect(r.text).toContain("private remittance text");
  });

  it("gives the slot back for withheld details: the TPP got nothing", async () => {
    const { gw, backend } = env;
    const path = "/v1/accounts/d-4/transactions/t-1";
    backend.behave(answerDetails({ bookingDate: daysAgo(91) }));
    for (let i = 0; i < 3; i++) expect((await unattended(gw, path)).status).toBe(400);
    backend.behave(answerDetails({ bookingDate: daysAgo(1) }));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await unattended(gw, path)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
  });

  it("streams answers other than 2xx as they are (an error carries no transaction)", async () => {
    const { gw, backend } = env;
    backend.behave((_req, res) =>
      res
        .writeHead(404, { "content-type": "application/json" })
        .end('{"tppMessages":[{"category":"ERROR","code":"RESOURCE_UNKNOWN","text":"no such transaction"}]}'),
    );
    const r = await unattended(gw, "/v1/accounts/d-5/transactions/t-404");
    expect(r.status).toBe(404);
    expect(r.text).toContain("no such transaction");
  });

  it("withholds, with 502, an answer it cannot date: too large, compressed or without a date", async () => {
    const { gw, backend } = env;
    const path = "/v1/accounts/d-6/transactions/t-1";
    backend.behave(answerDetails({ bookingDate: daysAgo(1), padding: "x".repeat(70 * 1024) }));
    expectRejected(await unattended(gw, path), {
      status: 502,
      code: "BAD_GATEWAY",
      text: ["larger than 65536 bytes", "unattended-period", "it was withheld"],
    });
    backend.behave((_req, res) =>
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end("\x1f\x8b"),
    );
    expectRejected(await unattended(gw, path), {
      status: 502,
      code: "BAD_GATEWAY",
      text: ["Content-Encoding gzip", "send the request without Accept-Encoding"],
    });
    backend.behave(answerDetails({}));
    expectRejected(await unattended(gw, path), {
      status: 502,
      code: "BAD_GATEWAY",
      text: ["names neither bookingDate nor valueDate", "read it with the PSU present"],
    });
  });
});

describe("with response signing as well, a details answer is checked first and signed after", () => {
  const env = useGatewayAndBackend((pki) => ({
    now: () => NOW,
    config: { responseSigning: { qseal: { cert: pki.paths.bankQseal, key: pki.paths.bankQsealKey } } },
  }));

  it("signs recent details and withholds old ones unsigned", async () => {
    const { gw, backend } = env;
    backend.behave(answerDetails({ bookingDate: daysAgo(5) }));
    const ok = await unattended(gw, "/v1/accounts/s-1/transactions/t-1");
    expect(ok.status, ok.text).toBe(200);
    expect(ok.headers["signature"]).toBeDefined();
    expect(ok.text).toContain(daysAgo(5));

    backend.behave(answerDetails({ bookingDate: daysAgo(91) }));
    const old = await unattended(gw, "/v1/accounts/s-1/transactions/t-1");
    expectRejected(old, { status: 400, code: "PERIOD_INVALID", text: [`bookingDate is ${daysAgo(91)}`] });
    expect(old.headers["signature"]).toBeUndefined();
  });
});
