/**
 * Issue 6, proof 1: scrape the admin listener's /metrics before and after a scripted mix of good
 * and bad requests, and check that every counter moved by exactly what was sent. A real gateway
 * over TLS on loopback, a real backend, the real admin listener; no mocks.
 */

import { X509Certificate } from "node:crypto";
import { request } from "undici";
import { beforeAll, describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import {
  type CallResult,
  prepareSignedCall,
  send,
  signedCall,
  type TestGateway,
} from "../helpers/gateway-fixture.js";
import { movedSeries, type Scrape, scrape } from "../helpers/prometheus-text.js";

const ACCOUNTS = "/v1/accounts";
const PAYMENTS = "/v1/payments/norwegian-domestic-credit-transfers";
const PAYMENT_BODY = JSON.stringify({
  instructedAmount: { amount: "10.00", currency: "NOK" },
  creditorName: "Ola Nordmann",
  creditorAccount: { bban: "12345678903" },
});
const DAY_SECONDS = 24 * 3600;

function codeOf(r: CallResult): string | undefined {
  return r.json.tppMessages?.[0]?.code;
}

describe("/metrics after a scripted mix of good and bad requests", () => {
  let before: Scrape;
  let after: Scrape;
  let startedAt: number;
  /** Every response of the script, in order, to check the script did what it says. */
  const seen: { what: string; status: number; code: string | undefined }[] = [];

  const env = useGatewayAndBackend(() => {
    startedAt = Date.now();
    // Refusals cached for the whole run, so the expired certificate's second use is a hit whatever the pace.
    return { config: { cache: { failureTtlSeconds: 600 } } };
  });
  let gw: TestGateway;

  // The script, once; hooks run in order, so the gateway is up by now.
  beforeAll(async () => {
    gw = env.gw;
    const { backend } = env;
    const tppA = gw.pki.tppA.qseal;
    const record = (what: string, r: CallResult) => seen.push({ what, status: r.status, code: codeOf(r) });

    before = await scrape(gw.gateway.adminUrl!);

    for (let i = 0; i < 3; i++) record("good GET", await signedCall(gw, { signer: tppA, target: ACCOUNTS }));
    for (let i = 0; i < 2; i++)
      record(
        "good POST",
        await signedCall(gw, { signer: tppA, method: "POST", target: PAYMENTS, body: PAYMENT_BODY }),
      );
    record(
      "missing Signature",
      await signedCall(gw, {
        signer: tppA,
        target: ACCOUNTS,
        tamper: ({ headers }) => {
          const { Signature: _dropped, ...rest } = headers;
          return { headers: rest };
        },
      }),
    );
    for (let i = 0; i < 2; i++)
      record("expired certificate", await signedCall(gw, { signer: gw.pki.expired, target: ACCOUNTS }));
    record(
      "role failure",
      await signedCall(gw, {
        signer: gw.pki.tppB.qseal,
        method: "POST",
        target: PAYMENTS,
        body: PAYMENT_BODY,
      }),
    );
    const once = await prepareSignedCall({ signer: tppA, method: "POST", target: PAYMENTS, body: "{}" });
    record("replayed: first", await send(gw, once.method, once.target, once.headers, once.body));
    record("replayed: again", await send(gw, once.method, once.target, once.headers, once.body));
    for (let i = 0; i < 5; i++)
      record(
        "unattended balances",
        await signedCall(gw, {
          signer: tppA,
          target: "/v1/accounts/acc-metrics/balances",
          omitHeaders: ["PSU-IP-Address"],
        }),
      );
    backend.behave((req) => req.socket.destroy());
    record("backend reset", await signedCall(gw, { signer: tppA, target: ACCOUNTS }));
    backend.reset();

    after = await scrape(gw.gateway.adminUrl!);
  });

  it("the script itself got the answers it was written for (17 requests)", () => {
    expect(seen.map((s) => `${s.what}: ${s.status} ${s.code ?? ""}`.trim())).toEqual([
      "good GET: 200",
      "good GET: 200",
      "good GET: 200",
      "good POST: 200",
      "good POST: 200",
      "missing Signature: 400 SIGNATURE_MISSING",
      "expired certificate: 400 CERTIFICATE_EXPIRED",
      "expired certificate: 400 CERTIFICATE_EXPIRED",
      "role failure: 400 ROLE_INVALID",
      "replayed: first: 200",
      "replayed: again: 400 SIGNATURE_INVALID",
      "unattended balances: 200",
      "unattended balances: 200",
      "unattended balances: 200",
      "unattended balances: 200",
      "unattended balances: 429 ACCESS_EXCEEDED",
      "backend reset: 502 BAD_GATEWAY",
    ]);
    expect(seen).toHaveLength(17);
  });

  it("psd2_gateway_requests_total moved by exactly the requests sent, by outcome and status", () => {
    expect(movedSeries(before, after, "psd2_gateway_requests_total", ["mode", "outcome", "status"])).toEqual({
      "mode=ingress,outcome=forwarded,status=200": 10,
      "mode=ingress,outcome=rejected,status=400": 5,
      "mode=ingress,outcome=rejected,status=429": 1,
      "mode=ingress,outcome=upstream_error,status=502": 1,
    });
  });

  it("forwarded requests and upstream errors are counted under their route class", () => {
    expect(
      movedSeries(before, after, "psd2_gateway_requests_total", ["route_class", "outcome", "status"], {
        outcome: "forwarded",
      }),
    ).toEqual({
      // 3 GETs and 4 unattended balance reads / 2 POSTs and the first of the replayed pair.
      "route_class=ais,outcome=forwarded,status=200": 7,
      "route_class=pis,outcome=forwarded,status=200": 3,
    });
    expect(
      movedSeries(before, after, "psd2_gateway_requests_total", ["route_class", "status"], {
        outcome: "upstream_error",
      }),
    ).toEqual({ "route_class=ais,status=502": 1 });
  });

  // WAS A BUG, kept as a regression test: every rejection was recorded with route class "other", so
  // a refused GET /v1/accounts did not count as "ais" and the dashboard's "rejection ratio by route
  // class" (deploy/grafana-dashboard.json) showed 0 % for ais/pis and 100 % for other. The route
  // class is known from the path even before the certificate is checked.
  it("rejected requests are counted under the route class of their path, not 'other'", () => {
    expect(
      movedSeries(before, after, "psd2_gateway_requests_total", ["route_class", "status"], {
        outcome: "rejected",
      }),
    ).toEqual({
      // missing Signature and 2 expired on /v1/accounts; role failure and replay on /v1/payments/…
      "route_class=ais,status=400": 3,
      "route_class=pis,status=400": 2,
      "route_class=ais,status=429": 1,
    });
  });

  it("psd2_gateway_rejections_total moved by exactly one per refusal, by Berlin Group code", () => {
    expect(movedSeries(before, after, "psd2_gateway_rejections_total", ["code"])).toEqual({
      "code=SIGNATURE_MISSING": 1,
      "code=CERTIFICATE_EXPIRED": 2,
      "code=ROLE_INVALID": 1,
      "code=SIGNATURE_INVALID": 1,
      "code=ACCESS_EXCEEDED": 1,
      "code=BAD_GATEWAY": 1,
    });
  });

  it("replay refusals, unattended-limit rejections and upstream errors moved by exactly one", () => {
    expect(
      after.value("psd2_gateway_replay_refusals_total") - before.value("psd2_gateway_replay_refusals_total"),
    ).toBe(1);
    expect(movedSeries(before, after, "psd2_gateway_unattended_limit_rejections_total", ["class"])).toEqual({
      "class=balances": 1,
    });
    expect(movedSeries(before, after, "psd2_gateway_upstream_errors_total", ["kind"])).toEqual({
      "kind=bad_gateway": 1,
    });
  });

  it("the certificate verdict cache: 3 misses (tpp A, expired, tpp B), 13 hits, 3 entries, no evictions", () => {
    const moved = (name: string) => after.value(name) - before.value(name);
    // Misses: first use of tpp A's, the expired and tpp B's QSealC. The missing-Signature request
    // is refused before the certificate is looked at. Hits: the other 13 uses of those three.
    expect(moved("psd2_gateway_certificate_cache_misses_total")).toBe(3);
    expect(moved("psd2_gateway_certificate_cache_hits_total")).toBe(13);
    expect(after.only("psd2_gateway_certificate_cache_entries")).toBe(3);
    expect(moved("psd2_gateway_certificate_cache_evictions_total")).toBe(0);
  });

  it("the duration histograms observed every request once; the upstream one only those the backend answered", () => {
    const count = (s: Scrape, name: string) => s.value(`${name}_count`, { mode: "ingress" });
    const moved = (name: string) => count(after, name) - count(before, name);
    expect(moved("psd2_gateway_request_duration_seconds")).toBe(17);
    expect(moved("psd2_gateway_own_duration_seconds")).toBe(17);
    // 10 forwarded and answered; the reset connection never produced response headers.
    expect(moved("psd2_gateway_upstream_duration_seconds")).toBe(10);
    // The +Inf bucket is the count, per series; the sum is a positive number of seconds.
    for (const series of after.series("psd2_gateway_request_duration_seconds_count")) {
      expect(
        after.only("psd2_gateway_request_duration_seconds_bucket", { ...series.labels, le: "+Inf" }),
      ).toBe(series.value);
    }
    const sum = after.value("psd2_gateway_request_duration_seconds_sum");
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(60);
  });

  it("register gauges: 2 entries, loaded moments ago, last success timestamp in this run, no failures", () => {
    expect(after.only("psd2_gateway_register_entries")).toBe(2);
    const age = after.only("psd2_gateway_register_age_seconds");
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(60);
    const last = after.only("psd2_gateway_register_last_success_timestamp_seconds");
    expect(last).toBeGreaterThanOrEqual(Math.floor(startedAt / 1000) - 1);
    expect(last).toBeLessThanOrEqual(Date.now() / 1000 + 1);
    expect(after.value("psd2_gateway_register_refresh_failures_total")).toBe(0);
    expect(after.value("psd2_gateway_store_errors_total")).toBe(0);
    expect(after.value("psd2_gateway_store_evictions_total")).toBe(0);
  });

  it("the backend pool once every answer is out: no request in flight or queued, every open connection idle", () => {
    const backendHost = new URL(env.backend.url).host;
    const gauge = (name: string, state: string) => after.only(name, { backend: backendHost, state });
    expect(gauge("psd2_gateway_backend_connections", "idle")).toBe(
      gauge("psd2_gateway_backend_connections", "open"),
    );
    expect(gauge("psd2_gateway_backend_requests", "in-flight")).toBe(0);
    expect(gauge("psd2_gateway_backend_requests", "queued")).toBe(0);
  });

  it("certificate expiry gauges for the TLS certificate and both trusted CAs, in seconds", () => {
    const days = (labels: Record<string, string>) =>
      after.only("psd2_gateway_certificate_expiry_seconds", labels) / DAY_SECONDS;
    const tlsNotAfter = new Date(new X509Certificate(gw.pki.gatewayTls.pem).validTo).getTime();
    expect(days({ kind: "tls", name: "localhost" })).toBeCloseTo(
      (tlsNotAfter - Date.now()) / 1000 / DAY_SECONDS,
      1,
    );
    expect(days({ kind: "ca", name: "Demo Root CA" })).toBeGreaterThan(3640);
    expect(days({ kind: "ca", name: "Demo Qualified Issuing CA" })).toBeGreaterThan(3640);
    // The root, the issuing CA and the revoked CA (kept in trust/; its revocation is the root's word).
    expect(after.series("psd2_gateway_certificate_expiry_seconds", { kind: "ca" })).toHaveLength(3);
  });

  it("follows the naming conventions, with bounded label values (no paths, no ids) and Node's default metrics", () => {
    const ours = after.samples.filter((s) => s.name.startsWith("psd2_gateway_"));
    expect(ours.length).toBeGreaterThan(20);
    for (const [name, family] of after.families) {
      if (!name.startsWith("psd2_gateway_")) continue;
      expect(family.help, name).toBeTruthy();
      if (family.type === "counter") expect(name, name).toMatch(/_total$/);
      if (family.type === "histogram") expect(name, name).toMatch(/_seconds$/);
    }
    for (const s of ours) {
      for (const [label, value] of Object.entries(s.labels)) {
        // A trust source is named by its URL or file: configured, or one of at most
        // revocation.crl.maxLists distribution points and 256 responders, never a request's.
        if (label === "source" && s.name.startsWith("psd2_gateway_trust_source_")) continue;
        expect(value, `${s.name} ${label}`).not.toMatch(/\/|[0-9a-f]{8}-[0-9a-f]{4}-|acc-metrics/i);
      }
    }
    const routeClasses = new Set(
      after.series("psd2_gateway_requests_total").map((s) => s.labels["route_class"]),
    );
    for (const c of routeClasses) expect(["ais", "pis", "piis", "as", "other"]).toContain(c);
    expect(after.series("process_cpu_user_seconds_total")).toHaveLength(1);
    expect(after.series("nodejs_eventloop_lag_seconds")).toHaveLength(1);
  });

  it("the admin listener answers only GET/HEAD on its three paths", async () => {
    const admin = gw.gateway.adminUrl!;
    const post = await request(`${admin}/metrics`, { method: "POST", body: "x" });
    await post.body.dump();
    expect(post.statusCode).toBe(405);
    const unknown = await request(`${admin}/v1/accounts`);
    await unknown.body.dump();
    expect(unknown.statusCode).toBe(404);
  });
});
