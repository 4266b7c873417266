/**
 * The browser tooling itself: Debian's Chromium, driven by playwright-core, fills in and submits a
 * plain HTML form (JavaScript off, as a PSU's browser on a bank's consent page may be) served by a
 * node:http server on loopback. It proves that later browser tests can run, here and in CI.
 */

import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeWithBrowser, launchBrowser } from "../helpers/browser.js";

const FORM = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Consent</title></head>
<body>
  <form method="post" action="/consent">
    <label>PSU ID <input name="psuId" id="psuId"></label>
    <label><input type="checkbox" name="accept" value="yes" id="accept"> I accept</label>
    <button type="submit" id="submit">Approve</button>
  </form>
  <noscript><p id="noscript">JavaScript is off</p></noscript>
</body></html>`;

interface Posted {
  readonly contentType: string | undefined;
  readonly fields: URLSearchParams;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

describeWithBrowser("a real Chromium (playwright-core) against a loopback server", () => {
  let server: Server;
  let origin: string;
  let browser: Browser;
  const posted: Posted[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.method === "GET" && req.url === "/") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(FORM);
        return;
      }
      if (req.method === "POST" && req.url === "/consent") {
        void readBody(req).then((body) => {
          posted.push({ contentType: req.headers["content-type"], fields: new URLSearchParams(body) });
          res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<p id=done>approved</p>");
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it("fills in and submits a form without JavaScript, and the server receives the POST", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      // The <noscript> content shows only when the page really runs without JavaScript.
      expect(await page.locator("#noscript").isVisible()).toBe(true);
      await page.fill("#psuId", "PSU-1001 æøå");
      await page.check("#accept");
      await Promise.all([page.waitForURL(`${origin}/consent`), page.click("#submit")]);
      expect(await page.textContent("#done")).toBe("approved");
    } finally {
      await context.close();
    }
    expect(posted).toHaveLength(1);
    expect(posted[0]!.contentType).toBe("application/x-www-form-urlencoded");
    expect(posted[0]!.fields.get("psuId")).toBe("PSU-1001 æøå");
    expect(posted[0]!.fields.get("accept")).toBe("yes");
  });
});
