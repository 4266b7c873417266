import { describe, expect, it } from "vitest";
import {
  appendUpstreamRequestHeaders,
  downstreamResponseHeaders,
  HeadPairs,
  joinedHeaders,
  upstreamRequestHeaders,
} from "../../../src/forward/headers.js";

/** The flat list ingress sends, written into a HeadPairs sized as the handler sizes it. */
function upstreamRequestHeaderList(
  headers: Parameters<typeof appendUpstreamRequestHeaders>[0],
  strip: ReadonlySet<string>,
): string[] {
  const head = new HeadPairs(2 * Object.keys(headers).length + 4);
  appendUpstreamRequestHeaders(headers, strip, head);
  return head.list();
}

const STRIP = new Set(["x-tpp-organization-id", "x-tpp-roles"]);

describe("headers on the way to the backend", () => {
  it.each([
    [
      "hop-by-hop headers",
      {
        connection: "keep-alive",
        "keep-alive": "timeout=5",
        te: "trailers",
        upgrade: "h2c",
        "proxy-authorization": "Basic x",
        "transfer-encoding": "chunked",
      },
    ],
    ["headers undici sets itself", { host: "gateway.example", expect: "100-continue" }],
    ["names listed in Connection", { connection: "x-hop, X-Other", "x-hop": "1", "x-other": "2" }],
    ["one name listed in Connection", { connection: " X-Hop ", "x-hop": "1", "keep-alive": "timeout=5" }],
    ["Keep-Alive listed in Connection", { connection: "Keep-Alive", "keep-alive": "timeout=5" }],
    ["keep-alive and a name listed in Connection", { connection: "keep-alive, x-hop", "x-hop": "1" }],
    [
      "identity headers a client could forge",
      { "x-tpp-organization-id": "PSDNO-FSA-FAKE", "x-tpp-roles": "PSP_PI" },
    ],
    [
      "'_' look-alikes of identity headers",
      { x_tpp_organization_id: "PSDNO-FSA-FAKE", x_tpp_roles: "PSP_PI" },
    ],
    [
      "'.' and mixed look-alikes of identity headers",
      { "x.tpp.organization.id": "PSDNO-FSA-FAKE", "x_tpp.roles": "PSP_PI", "x-tpp_roles": "PSP_IC" },
    ],
  ])("drops %s", (_what, headers) => {
    expect(upstreamRequestHeaders({ ...headers, "psu-id": "p1" }, STRIP)).toEqual({ "psu-id": "p1" });
    // The flat list ingress sends drops the same.
    expect(upstreamRequestHeaderList({ ...headers, "psu-id": "p1" }, STRIP)).toEqual(["psu-id", "p1"]);
  });

  it("keeps end-to-end headers, repeated ones as arrays", () => {
    const out = upstreamRequestHeaders({ "x-request-id": "r1", "set-thing": ["a", "b"] } as never, STRIP);
    expect(out).toEqual({ "x-request-id": "r1", "set-thing": ["a", "b"] });
    const list = upstreamRequestHeaderList({ "x-request-id": "r1", "set-thing": ["a", "b"] } as never, STRIP);
    expect(list).toEqual(["x-request-id", "r1", "set-thing", "a", "set-thing", "b"]);
  });

  it("keeps look-alikes of names that are not stripped, and everything when nothing is", () => {
    const headers = { x_request_id: "r1", "x.correlation.id": "c1", "x-tpp-roles": "PSP_AI" };
    expect(upstreamRequestHeaders(headers, STRIP)).toEqual({ x_request_id: "r1", "x.correlation.id": "c1" });
    expect(upstreamRequestHeaders(headers, new Set())).toEqual(headers);
    expect(upstreamRequestHeaderList(headers, STRIP)).toEqual([
      "x_request_id",
      "r1",
      "x.correlation.id",
      "c1",
    ]);
    expect(upstreamRequestHeaderList(headers, new Set())).toEqual(Object.entries(headers).flat());
  });
});

describe("HeadPairs", () => {
  it.each([
    ["fewer than its capacity", 10, 2],
    ["exactly its capacity", 4, 2],
    ["more than its capacity (it grows)", 2, 5],
  ])("holds the pairs written, %s, and nothing else", (_what, capacity, pairs) => {
    const head = new HeadPairs(capacity);
    for (let i = 0; i < pairs; i++) head.push(`n${i}`, `v${i}`);
    const list = head.list();
    expect(list).toEqual(Array.from({ length: pairs }, (_, i) => [`n${i}`, `v${i}`]).flat());
    // No hole left where the capacity was larger: undici reads the list by index to its length.
    expect(list.every((entry) => typeof entry === "string")).toBe(true);
  });
});

describe("headers on the way back to the client", () => {
  it("drops hop-by-hop headers and the names the backend listed in Connection", () => {
    const out = downstreamResponseHeaders({
      "content-type": "application/json",
      connection: "x-internal",
      "x-internal": "secret",
      "transfer-encoding": "chunked",
      "keep-alive": "timeout=5",
      "x-request-id": "r1",
      empty: undefined,
    });
    expect(out).toEqual({ "content-type": "application/json", "x-request-id": "r1" });
  });

  it.each([
    ["Connection repeated, as an array", { connection: ["close", "X-Internal"], "x-internal": "secret" }],
    ["Connection: keep-alive alone", { connection: "keep-alive", "keep-alive": "timeout=5" }],
    ["upgrade and trailer", { upgrade: "h2c", trailer: "x-checksum", "proxy-authenticate": "Basic" }],
  ])("drops %s", (_what, headers) => {
    const out = downstreamResponseHeaders({ ...headers, "x-request-id": "r1" } as never);
    expect(out).toEqual({ "x-request-id": "r1" });
  });
});

describe("joinedHeaders", () => {
  it("joins repeated values with ', ' and leaves single ones as they are", () => {
    expect(
      joinedHeaders({ accept: ["application/json", "text/plain"], "x-request-id": "r1", empty: [] }),
    ).toEqual({ accept: "application/json, text/plain", "x-request-id": "r1", empty: "" });
  });
});
