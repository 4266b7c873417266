/**
 * The upstream head is a flat list: an identity header and a forwarding header configured under one
 * name would reach the backend twice. A reload that asks for it fails, naming both keys, and the
 * running configuration keeps serving with its own names, each once.
 */

import { describe, expect, it } from "vitest";
import { useGatewayAndBackend } from "../helpers/gateway-and-backend.js";
import { signedCall } from "../helpers/gateway-fixture.js";

describe("identity and forwarding header names", () => {
  const env = useGatewayAndBackend();

  it("a reload naming one header twice fails and the running names stay, each sent once", async () => {
    const clashing = {
      ...env.gw.config,
      identityHeaders: { ...env.gw.config.identityHeaders, psuPresent: "x-forwarded-for" },
    };
    await expect(env.gw.gateway.reconfigure(clashing)).rejects.toThrow(
      "backend.forwardedHeaders.for names 'x-forwarded-for', which identityHeaders.psuPresent writes too",
    );
    env.backend.reset();
    const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
    expect(r.status, r.text).toBe(200);
    // Node joins repeated lines with ", ": one value each means one line each.
    const { headers } = env.backend.requests[0]!;
    expect(headers["x-psu-present"]).toMatch(/^(true|false)$/);
    expect(headers["x-forwarded-for"]).toMatch(/^[0-9.:a-f]+$/);
  });
});
