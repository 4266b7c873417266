/**
 * The demo bank as `start` runs it (cli/start.ts startDemoBank, behind an in-process gateway): the
 * gateway's configured identity header names reach it, so its SCA page names the TPP by the
 * registered name the gateway wrote under the configured name, never by a header a client sent.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemoBank } from "../../src/cli/start.js";
import { signedCall, startTestGateway, type TestGateway } from "../helpers/gateway-fixture.js";

describe("the demo bank behind a gateway with renamed identity headers", () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({
      backendUrl: "sandbox",
      startDemoBank,
      config: {
        identityHeaders: { organizationId: "x-provider-id", name: "x-provider-name" },
        sandbox: { port: 0 },
      },
    });
  }, 60_000);
  afterAll(() => gw?.close(0));

  it("shows the registered name the gateway wrote, not the name a client sent under the default header", async () => {
    const { tppA } = gw.pki;
    const started = await signedCall(gw, {
      signer: tppA.qseal,
      method: "POST",
      target: "/v1/bank-offered-consents",
      headers: { "TPP-Redirect-URI": "https://tpp.example/cb", "X-TPP-Name": "Spoofed%20Bank%20AS" },
      body: "{}",
    });
    expect(started.status, started.text).toBe(201);
    const link = (started.json._links as { scaRedirect: { href: string } }).scaRedirect.href;
    const html = await (await fetch(link)).text();
    expect(html).toContain(`${tppA.name} asks to read your accounts.`);
    expect(html).toContain(`registered as ${tppA.organizationId}.`);
    expect(html).not.toContain("Spoofed");
  });
});
