/**
 * The upstream head is one flat list (issue 42): a `backendHeaders` name the gateway also writes or
 * strips would go to the backend twice. Such a handler is refused when it is built (start or reload).
 */

import { describe, expect, it } from "vitest";
import { DEFAULT_FORWARDED_HEADER_NAMES } from "../../../src/ingress/forwarded.js";
import {
  createIngressHandler,
  DEFAULT_IDENTITY_HEADER_NAMES,
  type HandlerOptions,
} from "../../../src/ingress/handler.js";

/** What the handler's constructor reads; the request-time parts are never reached by building it. */
function options(more: Partial<HandlerOptions>): HandlerOptions {
  return {
    chain: undefined as never,
    roles: undefined as never,
    backend: undefined as never,
    statusProfile: undefined as never,
    identityHeaders: DEFAULT_IDENTITY_HEADER_NAMES,
    trustedProxies: new Set(),
    clientCertificateHeader: "x-client-cert",
    ...more,
  };
}

describe("backendHeaders beside the headers the gateway writes", () => {
  it.each([
    ["an identity header (default name)", {}, "X-TPP-Organization-ID"],
    [
      "an identity header renamed by config",
      { identityHeaders: { ...DEFAULT_IDENTITY_HEADER_NAMES, roles: "x-secret" } },
      "x-secret",
    ],
    ["a forwarding header", {}, "x-forwarded-for"],
    ["the trace context", {}, "traceparent"],
    ["the client certificate header", {}, "X-Client-Cert"],
  ])("one naming %s is refused when the handler is built", (_what, more, name) => {
    expect(() => createIngressHandler(options({ ...more, backendHeaders: { [name]: "v" } }))).toThrow(
      `the backend header '${name.toLowerCase()}' is also one the gateway writes or strips itself`,
    );
  });

  it.each([
    [
      "two identity headers",
      { identityHeaders: { ...DEFAULT_IDENTITY_HEADER_NAMES, name: "x-tpp-roles" } },
      "identityHeaders.roles names 'x-tpp-roles', which identityHeaders.name writes too",
    ],
    [
      "an identity header and a forwarding header",
      { identityHeaders: { ...DEFAULT_IDENTITY_HEADER_NAMES, psuPresent: "X-Forwarded-For" } },
      "backend.forwardedHeaders.for names 'x-forwarded-for', which identityHeaders.psuPresent writes too",
    ],
    [
      "a forwarding header and the trace context",
      { forwardedHeaders: { ...DEFAULT_FORWARDED_HEADER_NAMES, prefix: "traceparent" } },
      "names 'traceparent', which backend.forwardedHeaders.prefix writes too",
    ],
  ])("%s of one name are refused when the handler is built", (_what, more, text) => {
    expect(() => createIngressHandler(options(more))).toThrow(text);
  });

  it("one of its own name builds", () => {
    const factory = createIngressHandler(options({ backendHeaders: { "x-sandbox-gateway-secret": "s" } }));
    expect(typeof factory.create).toBe("function");
  });
});
