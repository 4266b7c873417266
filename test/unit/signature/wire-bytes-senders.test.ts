/**
 * The signing string is the bytes on the wire (issue 11, defect 3), for every way a request gets
 * there: our RequestSigner sent by Node's http client and by undici, a hand-written request on a
 * raw socket (UTF-8 and raw Latin-1 bytes, signed with node:crypto directly), and an independent
 * signer (http-message-signatures, which signs the UTF-8 of its strings). A real Node server on
 * loopback receives each; verifyRequestSignature judges what it received.
 */

import { createHash, sign as cryptoSign } from "node:crypto";
import { createServer, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { cavage, createSigner } from "http-message-signatures";
import { request as undiciRequest } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRejection } from "../../../src/errors.js";
import {
  buildSigningString,
  keyIdTargetFromDer,
  RequestSigner,
  signingStringBytes,
  verifyRequestSignature,
  wireValue,
} from "../../../src/signature/index.js";
import { type ThrowawayTpp, throwawayTpp } from "../../helpers/throwaway-tpp.js";

interface Received {
  readonly target: string;
  readonly headers: IncomingHttpHeaders;
}

let tpp: ThrowawayTpp;
let port: number;
const arrivals: ((r: Received) => void)[] = [];
const server = createServer((req, res) => {
  arrivals.shift()?.({ target: req.url ?? "", headers: req.headers });
  res.end();
});

beforeAll(async () => {
  tpp = await throwawayTpp({ subject: "CN=Wire TPP,O=Bytes\\, Latin-1 & UTF-8 AS,C=NO" });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Resolves with the next request the server receives. */
function nextArrival(): Promise<Received> {
  return new Promise((resolve) => arrivals.push(resolve));
}

/** The server's view, judged as the gateway does (keyId rule on). */
function judge(got: Received) {
  const result = verifyRequestSignature(
    { method: "GET", target: got.target, headers: got.headers },
    { publicKey: tpp.publicKey, keyIdTarget: keyIdTargetFromDer(tpp.certificateDer) },
  );
  return isRejection(result) ? result.text : "verified";
}

/** The bytes of a header as the server received them. */
function wireHex(got: Received, name: string): string {
  return Buffer.from(String(got.headers[name]), "latin1").toString("hex");
}

const hex = (text: string, encoding: BufferEncoding = "utf8") => Buffer.from(text, encoding).toString("hex");

// ---------------------------------------------------------------------------------------------

type Client = "node:http" | "undici";

async function sendWith(client: Client, path: string, headers: Record<string, string>): Promise<Received> {
  const arrived = nextArrival();
  if (client === "undici") {
    const response = await undiciRequest(`http://127.0.0.1:${port}${path}`, { headers });
    await response.body.dump();
  } else {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path, headers, agent: false }, (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end();
    });
  }
  return arrived;
}

describe("RequestSigner → Node's http client or undici → Node server → verifier", () => {
  const CASES: [string, string, string, "utf-8" | "latin1", string][] = [
    ["PSU-ID", "Øystein Ås", "utf-8", hex("Ø")],
    ["PSU-ID", "José Müller", "utf-8", hex("é")],
    ["PSU-ID", "José Müller", "latin1", "e9"],
    ["TPP-Redirect-URI", "https://tpp.example/cb?name=Øystein&ü=1", "utf-8", hex("Øystein")],
    ["TPP-Redirect-URI", "https://tpp.example/cb?name=Müller", "latin1", hex("Müller", "latin1")],
    ["PSU-Corporate-ID", "Bjørn Ü. é", "utf-8", hex("ø")],
  ].map(([name, value, encoding, bytes]) => [
    `${name} ${JSON.stringify(value)} as ${encoding}`,
    name!,
    value!,
    encoding as "utf-8" | "latin1",
    bytes!,
  ]);

  for (const client of ["node:http", "undici"] as const) {
    it.each(CASES)(`%s, sent by ${client}`, async (_what, name, value, encoding, bytes) => {
      const signer = new RequestSigner({
        privateKey: tpp.privateKey,
        certificate: tpp.certificateDer,
        headerEncoding: encoding,
      });
      const own = { [name]: value, "X-Request-ID": "99391c7e-ad88-49ec-a2ad-99ddcb1f7721" };
      const signed = await signer.sign({ method: "GET", target: "/v1/accounts?x=%C3%98", headers: own });
      // The signer hands back the value in its wire form, to be sent instead of the caller's own.
      expect(signed[name]).toBe(wireValue(value, encoding));
      const got = await sendWith(client, "/v1/accounts?x=%C3%98", { ...own, ...signed });
      expect(wireHex(got, name.toLowerCase())).toContain(bytes);
      expect(judge(got)).toBe("verified");
    });
  }
});

// ---------------------------------------------------------------------------------------------

describe("a request written byte by byte on a raw socket (signed with node:crypto, not our signer)", () => {
  /** Sends the head as these exact bytes; the signature covers `signed` lines built from the same bytes. */
  async function sendRaw(values: { psuId: Buffer; redirect: Buffer }): Promise<Received> {
    const date = new Date().toUTCString();
    const requestId = "0ee25bf1-4d8d-4b6b-9f38-a86b9d2d1f19";
    const digest = `SHA-256=${createHash("sha256").update("").digest("base64")}`;
    const signingBytes = Buffer.concat([
      Buffer.from(
        `(request-target): get /v1/accounts\ndate: ${date}\ndigest: ${digest}\nx-request-id: ${requestId}\npsu-id: `,
      ),
      values.psuId,
      Buffer.from("\ntpp-redirect-uri: "),
      values.redirect,
    ]);
    const signature = cryptoSign("sha256", signingBytes, tpp.privateKey).toString("base64");
    const keyId = new RequestSigner({ privateKey: tpp.privateKey, certificate: tpp.certificateDer }).keyId;
    const head = Buffer.concat([
      Buffer.from(
        `GET /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nDate: ${date}\r\nDigest: ${digest}\r\nX-Request-ID: ${requestId}\r\nPSU-ID: `,
      ),
      values.psuId,
      Buffer.from("\r\nTPP-Redirect-URI: "),
      values.redirect,
      Buffer.from(
        `\r\nSignature: keyId="${keyId}",algorithm="rsa-sha256",headers="(request-target) date digest x-request-id psu-id tpp-redirect-uri",signature="${signature}"\r\nConnection: close\r\n\r\n`,
      ),
    ]);
    const arrived = nextArrival();
    await new Promise<void>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => socket.end(head));
      socket.on("error", reject);
      socket.on("close", () => resolve());
      socket.resume();
    });
    return arrived;
  }

  it.each([
    [
      "a raw 0xE9 byte (é in Latin-1) in PSU-ID, UTF-8 Ø in the redirect",
      Buffer.from([0x4a, 0x6f, 0x73, 0xe9]),
      Buffer.from("https://tpp.example/cb?n=Øystein"),
    ],
    [
      "UTF-8 é ü Ø in PSU-ID, raw 0xFC (ü in Latin-1) in the redirect",
      Buffer.from("é-ü-Ø"),
      Buffer.from([...Buffer.from("https://tpp.example/cb?n=M"), 0xfc, 0x6c]),
    ],
  ])("%s: verifies", async (_what, psuId, redirect) => {
    const got = await sendRaw({ psuId, redirect });
    expect(wireHex(got, "psu-id")).toBe(psuId.toString("hex"));
    expect(judge(got)).toBe("verified");
    // What the verifier once did, re-encoding the rebuilt string as UTF-8, gives other bytes.
    const rebuilt = buildSigningString(["psu-id"], {
      method: "GET",
      target: got.target,
      headers: got.headers,
    });
    expect(Buffer.from(rebuilt as string, "utf8").equals(Buffer.from(rebuilt as string, "latin1"))).toBe(
      false,
    );
  });

  it("…and one byte changed on the way does not", async () => {
    const got = await sendRaw({
      psuId: Buffer.from([0xe9]),
      redirect: Buffer.from("https://tpp.example/cb"),
    });
    const tampered = { ...got, headers: { ...got.headers, "psu-id": "\u00ea" } };
    expect(judge(tampered)).toContain("does not verify");
  });
});

// ---------------------------------------------------------------------------------------------

describe("an independent signer (http-message-signatures, draft-cavage): it signs the UTF-8 of its strings", () => {
  it("sent as those UTF-8 bytes (wireValue), its signature verifies on our side", async () => {
    const keyId = new RequestSigner({ privateKey: tpp.privateKey, certificate: tpp.certificateDer }).keyId;
    const headers = {
      Date: new Date().toUTCString(),
      "X-Request-ID": "5e1f7c2a-0000-4000-8000-000000000001",
      Digest: `SHA-256=${createHash("sha256").update("").digest("base64")}`,
      "PSU-ID": "Ærlig Øl, Müller & José",
    };
    const signed = await cavage.signMessage(
      {
        key: createSigner(tpp.privateKey, "rsa-v1_5-sha256", keyId),
        fields: ["@request-target", "date", "digest", "x-request-id", "psu-id"],
        params: ["keyid", "alg"],
      },
      { method: "GET", url: `http://127.0.0.1:${port}/v1/accounts`, headers },
    );
    const onTheWire = Object.fromEntries(
      Object.entries(signed.headers).map(([name, value]) => [name, wireValue(String(value))]),
    );
    const got = await sendWith("node:http", "/v1/accounts", onTheWire);
    expect(wireHex(got, "psu-id")).toBe(hex("Ærlig Øl, Müller & José"));
    expect(judge(got)).toBe("verified");
  });
});

// ---------------------------------------------------------------------------------------------

describe("decoded text is refused, not truncated to other bytes", () => {
  it("signingStringBytes refuses a value holding a char above U+00FF, naming the header", () => {
    const result = signingStringBytes(["date", "psu-id"], {
      method: "GET",
      target: "/",
      headers: { date: "x", "psu-id": "Łukasz" },
    });
    expect(isRejection(result) && result.text).toContain("'psu-id' value holds 'Ł' (U+0141)");
  });

  // Written straight into a buffer: the same bytes as the joined string, for any list, empty too.
  it.each([[[]], [["date"]], [["(request-target)", "date", "psu-id"]], [["(created)", "(expires)", "date"]]])(
    "signingStringBytes gives the joined signing string's bytes for %j",
    (signed) => {
      const request = { method: "GET", target: "/v1/a?b=%C3", headers: { date: "Mon", "psu-id": "\u00e9" } };
      const times = { created: 1, expires: 2 };
      const joined = buildSigningString(signed, request, times) as string;
      expect(signingStringBytes(signed, request, times)).toEqual(Buffer.from(joined, "latin1"));
    },
  );

  it("signingStringBytes gives Latin-1 values back as their bytes", () => {
    const result = signingStringBytes(["psu-id"], {
      method: "GET",
      target: "/",
      headers: { "psu-id": "\u00c3\u0098\u00e9" },
    });
    expect(Buffer.isBuffer(result) && result.toString("hex")).toBe(hex("psu-id: ") + "c398e9");
  });

  it("RequestSigner refuses a target that cannot be sent as one byte per char", async () => {
    const signer = new RequestSigner({ privateKey: tpp.privateKey, certificate: tpp.certificateDer });
    await expect(signer.sign({ method: "GET", target: "/v1/accounts/Łódź" })).rejects.toThrow(
      "percent-encode",
    );
  });
});
