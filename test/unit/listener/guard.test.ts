/** The listener's limits as configured (shared among workers) and how Node's timeouts are told apart. */

import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { connectionLimitsOf } from "../../../src/app/connection-limits.js";
import { validateConfig } from "../../../src/config/load.js";
import { clientErrorText, requestTimeoutKind } from "../../../src/listener/guard.js";

const TIMEOUT = Object.assign(new Error("Request timeout"), { code: "ERR_HTTP_REQUEST_TIMEOUT" });

describe("connectionLimitsOf", () => {
  const listen = validateConfig({ trust: { caDir: "/t" }, register: { file: "/r.json" } }).listen;

  it("has the documented defaults, in milliseconds", () => {
    expect(connectionLimitsOf(listen)).toEqual({
      maxConnections: 8192,
      maxConnectionsPerAddress: 256,
      tlsHandshakeTimeoutMs: 10_000,
      idleTimeoutMs: 5_000,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 65_000,
      sendTimeoutMs: 60_000,
    });
  });

  it("gives each of N workers its share of the caps, rounded up", () => {
    const limits = connectionLimitsOf({ ...listen, maxConnections: 10, maxConnectionsPerAddress: 1 }, 4);
    expect(limits.maxConnections).toBe(3);
    expect(limits.maxConnectionsPerAddress).toBe(1);
  });

  it("refuses a headers timeout longer than the request timeout (Node would throw)", () => {
    expect(() =>
      validateConfig({
        trust: { caDir: "/t" },
        register: { file: "/r.json" },
        listen: { headersTimeoutSeconds: 40, requestTimeoutSeconds: 30 },
      }),
    ).toThrow(/headersTimeoutSeconds/);
  });
});

describe("requestTimeoutKind", () => {
  it("is not a timeout for other client errors", () => {
    expect(requestTimeoutKind(new Error("Parse Error"), {} as Socket)).toBeUndefined();
    expect(clientErrorText(new Error("Parse Error: Invalid method"), {} as Socket)).toBe(
      "malformed HTTP request: Parse Error: Invalid method",
    );
  });

  it("is the headers timeout before any request of the connection was handed out", () => {
    expect(requestTimeoutKind(TIMEOUT, {} as Socket)).toBe("headers-timeout");
    expect(clientErrorText(TIMEOUT, {} as Socket)).toContain("listen.headersTimeoutSeconds");
  });
});
