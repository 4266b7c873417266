/**
 * The signing string is the bytes on the wire: what RequestSigner signs is what Node sends and
 * what the verifier rebuilds from Node's headers, for UTF-8 and for Latin-1 senders.
 */

import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import { RequestSigner, verifyRequestSignature, wireValue } from "../../../src/signature/index.js";
import { type ThrowawayTpp, throwawayTpp } from "../../helpers/throwaway-tpp.js";

let tpp: ThrowawayTpp;
let url: string;
let received: Promise<{ target: string; headers: IncomingHttpHeaders }>;
let deliver: (r: { target: string; headers: IncomingHttpHeaders }) => void;
const server = createServer((req, res) => {
  deliver({ target: req.url ?? "/", headers: req.headers });
  res.end();
});

beforeAll(async () => {
  tpp = await throwawayTpp();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Signs, sends through a real Node client and server, and verifies what the server got. */
async function roundTrip(value: string, encoding: "utf-8" | "latin1") {
  const signer = new RequestSigner({
    privateKey: tpp.privateKey,
    certificate: tpp.certificateDer,
    headerEncoding: encoding,
  });
  const headers = { "PSU-ID": value, "TPP-Redirect-URI": "https://tpp.example/cb" };
  const signed = await signer.sign({ method: "GET", target: "/v1/accounts", headers });
  received = new Promise((resolve) => {
    deliver = resolve;
  });
  await fetchWithNode({ ...headers, ...signed });
  const got = await received;
  return {
    got,
    result: verifyRequestSignature(
      { method: "GET", target: got.target, headers: got.headers },
      { publicKey: tpp.publicKey },
    ),
  };
}

async function fetchWithNode(headers: Record<string, string>): Promise<void> {
  const { request } = await import("node:http");
  await new Promise<void>((resolve, reject) => {
    const req = request(`${url}/v1/accounts`, { headers }, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("signer and verifier agree byte for byte", () => {
  it.each([
    ["UTF-8: Norwegian letters", "Ærøskøbing", "utf-8", "c386"],
    ["UTF-8: an emoji beyond the BMP", "psu-😀", "utf-8", "f09f9880"],
    ["UTF-8: a combining accent", "Cafe\u0301", "utf-8", "cc81"],
    ["Latin-1: é as the single byte 0xE9", "caf\u00e9", "latin1", "e9"],
    ["Latin-1: ÿ as 0xFF", "\u00ff", "latin1", "ff"],
    ["ASCII", "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a", "utf-8", "39"],
  ] as const)("%s", async (_what, value, encoding, wireHex) => {
    const { got, result } = await roundTrip(value, encoding);
    expect(isRejection(result), isRejection(result) ? result.text : "").toBe(false);
    // The server saw the value as those bytes, one Latin-1 char per byte.
    expect(Buffer.from(got.headers["psu-id"] as string, "latin1").toString("hex")).toContain(wireHex);
  });

  it("a value changed by one byte on the way no longer verifies", async () => {
    const signer = new RequestSigner({ privateKey: tpp.privateKey, certificate: tpp.certificateDer });
    const signed = await signer.sign({ method: "GET", target: "/v1/accounts", headers: { "PSU-ID": "Ærø" } });
    const headers = { ...lowerCase(signed), "psu-id": wireValue("Æro") };
    const result = verifyRequestSignature(
      { method: "GET", target: "/v1/accounts", headers },
      { publicKey: tpp.publicKey },
    );
    expect(isRejection(result)).toBe(true);
  });

  it("refuses to sign as Latin-1 what Latin-1 cannot carry", async () => {
    const signer = new RequestSigner({
      privateKey: tpp.privateKey,
      certificate: tpp.certificateDer,
      headerEncoding: "latin1",
    });
    await expect(signer.sign({ method: "GET", target: "/", headers: { "PSU-ID": "Ω" } })).rejects.toThrow(
      "beyond Latin-1",
    );
  });
});

function lowerCase(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v]));
}
