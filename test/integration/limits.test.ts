import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { prepareSignedCall, send, signedCall, startTestGateway } from "../helpers/gateway-fixture.js";
import { startRecordingBackend } from "../helpers/recording-backend.js";
import { UNATTENDED } from "../helpers/shared-store-gateways.js";

const BALANCES = "/v1/accounts/acc-1/balances";
/** Two days ago (UTC): well inside the 90 days unattended transaction reads may reach back. */
const RECENT = new Date(Date.now() - 2 * 24 * 3600 * 1000).toISOString().slice(0, 10);

describe("unattended access through the gateway (memory store)", () => {
  const env = useGatewayAndBackend();

  it("lets exactly 4 of 50 concurrent unattended balance calls on one account through", async () => {
    const { gw, backend } = env;
    const prepared = await Promise.all(
      Array.from({ length: 50 }, () =>
        prepareSignedCall({
          signer: gw.pki.tppA.qseal,
          target: "/v1/accounts/acc-50/balances",
          ...UNATTENDED,
        }),
      ),
    );
    const results = await Promise.all(prepared.map((p) => send(gw, p.method, p.target, p.headers)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4);
    expect(statuses.filter((s) => s === 429)).toHaveLength(46);
    expect(backend.requests).toHaveLength(4);
    const refused = results.find((r) => r.status === 429)!;
    expect(refused.json.tppMessages?.[0]?.code).toBe("ACCESS_EXCEEDED");
    expect(refused.headers["retry-after"]).toBe(String(24 * 3600));
    expect(refused.json.tppMessages?.[0]?.text).toContain("the next one is allowed at");
  });

  it("does not count calls with the PSU present, nor other accounts or classes", async () => {
    const { gw, backend } = env;
    for (let i = 0; i < 6; i++) {
      const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: BALANCES });
      expect(r.status).toBe(200);
    }
    for (const target of [
      "/v1/accounts/acc-2/balances",
      `/v1/accounts/acc-1/transactions?bookingStatus=booked&dateFrom=${RECENT}`,
    ]) {
      const r = await signedCall(gw, { signer: gw.pki.tppA.qseal, target, ...UNATTENDED });
      expect(r.status, r.text).toBe(200);
    }
    expect(backend.requests.at(-1)!.headers["x-psu-present"]).toBe("false");
  });

  it("gives the slot back when the backend does not answer 2xx, so the bank's failures burn no quota", async () => {
    const { gw, backend } = env;
    backend.behave((_req, res) =>
      res.writeHead(500, { "content-type": "application/json" }).end('{"error":"core down"}'),
    );
    for (let i = 0; i < 6; i++) {
      const r = await signedCall(gw, {
        signer: gw.pki.tppA.qseal,
        target: "/v1/accounts/acc-500/balances",
        ...UNATTENDED,
      });
      expect(r.status).toBe(500);
    }
    backend.reset();
    const results = [];
    for (let i = 0; i < 5; i++) {
      results.push(
        (
          await signedCall(gw, {
            signer: gw.pki.tppA.qseal,
            target: "/v1/accounts/acc-500/balances",
            ...UNATTENDED,
          })
        ).status,
      );
    }
    expect(results).toEqual([200, 200, 200, 200, 429]);
  });

  it("refuses unattended transaction reads older than 90 days with PERIOD_INVALID before the backend sees them", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      target: "/v1/accounts/acc-3/transactions?bookingStatus=booked&dateFrom=2020-01-01",
      ...UNATTENDED,
    });
    expect(r.status).toBe(400);
    expect(r.json.tppMessages?.[0]?.code).toBe("PERIOD_INVALID");
    expect(backend.requests).toHaveLength(0);
  });
});

describe("the memory store's snapshot across a restart", () => {
  it("keeps a TPP's used calls when the gateway restarts", async () => {
    const backend = await startRecordingBackend();
    const snapshotFile = join(mkdtempSync(join(tmpdir(), "psd2-limits-")), "limits.json");
    const config = { store: { snapshotFile } };
    const first = await startTestGateway({ backendUrl: backend.url, config });
    for (let i = 0; i < 4; i++) {
      const r = await signedCall(first, {
        signer: first.pki.tppA.qseal,
        target: "/v1/accounts/snap/balances",
        ...UNATTENDED,
      });
      expect(r.status).toBe(200);
    }
    await first.close();

    const second = await startTestGateway({ backendUrl: backend.url, config });
    const r = await signedCall(second, {
      signer: second.pki.tppA.qseal,
      target: "/v1/accounts/snap/balances",
      ...UNATTENDED,
    });
    expect(r.status).toBe(429);
    await second.close();
    await backend.close();
  });
});
