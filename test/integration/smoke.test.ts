import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall } from "../helpers/gateway-fixture.js";

describe("ingress smoke", () => {
  const env = useGatewayAndBackend();

  it("forwards a good GET and a good POST", async () => {
    const { gw, backend } = env;
    const get = await signedCall(gw, { signer: gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(get.status, get.text).toBe(200);
    const post = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      body: JSON.stringify({ a: 1 }),
    });
    expect(post.status, post.text).toBe(200);
    expect(backend.requests).toHaveLength(2);
    expect(backend.requests[1]!.headers["x-tpp-organization-id"]).toBe("PSDNO-FSA-DEMO0001");
  });

  it("refuses a tampered body and the backend never gets it whole", async () => {
    const { gw, backend } = env;
    const r = await signedCall(gw, {
      signer: gw.pki.tppA.qseal,
      method: "POST",
      target: "/v1/payments/norwegian-domestic-credit-transfers",
      body: JSON.stringify({ a: 1 }),
      tamper: ({ headers }) => ({ headers, body: JSON.stringify({ a: 2 }) }),
    });
    expect(r.status, r.text).toBe(400);
    expect(r.json.tppMessages?.[0]?.text).toContain("Digest header is SHA-256=");
    expect(backend.requests.filter((q) => q.complete)).toHaveLength(0);
  });
});
