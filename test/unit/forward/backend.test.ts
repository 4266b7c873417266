import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Backend } from "../../../src/forward/backend.js";

let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function get(backend: Backend): Promise<number> {
  const { statusCode, body } = await backend.pool.request({ path: "/", method: "GET" });
  await body.text();
  return statusCode;
}

describe("a backend pool retired by a reload", () => {
  it("stays open for an exchange that picked it before the reload, and closes once it lets go", async () => {
    const backend = new Backend({ url, timeoutMs: 5_000, connections: 2 });
    backend.hold(); // an exchange still reading its body when the reload comes
    let closed = false;
    const retired = backend.retire().then(() => {
      closed = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(false);
    // The exchange now sends on the pool it picked: it must still work.
    expect(await get(backend)).toBe(200);
    backend.release();
    await retired;
    expect(closed).toBe(true);
    await expect(get(backend)).rejects.toThrow(/destroyed|closed/i);
  });

  it("closes at once when nothing holds it", async () => {
    const backend = new Backend({ url, timeoutMs: 5_000, connections: 2 });
    await backend.retire();
    await expect(get(backend)).rejects.toThrow(/destroyed|closed/i);
  });
});
