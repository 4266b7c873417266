/**
 * A PSU at the sandbox's SCA page without a browser: GET the page, POST its forms with the token
 * from the page and the cookie the page set, follow the bank's 303s until the one that leaves for
 * TPP-Redirect-URI. The browser test (test/integration/sandbox-sca-browser.test.ts) walks the same
 * page in Chromium; this keeps the table-driven tests fast.
 */

import { SANDBOX_ONE_TIME_CODE } from "../src/index.js";

export interface ScaChoices {
  /** The customerNumber typed at the page. */
  readonly identity: string;
  /** The one-time code typed with it (default: the sandbox's). */
  readonly code?: string;
  /** Account resourceIds to tick (default: what the page ticks). */
  readonly accounts?: readonly string[];
  readonly agreement?: string;
  /** Cancel at the first step, or after identifying. */
  readonly cancel?: "at-identify" | "after-identify";
}

export interface ScaWalk {
  /** Where the bank sent the PSU at the end: TPP-Redirect-URI with the SPEC 2.6 parameters. */
  readonly redirect: URL;
  /** Every page the PSU saw, HTML. */
  readonly pages: readonly string[];
}

export async function walkSca(scaRedirect: string, choices: ScaChoices): Promise<ScaWalk> {
  const pages: string[] = [];
  let cookie = "";
  const open = async (url: string): Promise<string> => {
    const response = await fetch(url, { headers: cookie ? { cookie } : {}, redirect: "manual" });
    const setCookie = response.headers.get("set-cookie");
    if (setCookie) cookie = setCookie.split(";")[0]!;
    const html = await response.text();
    if (response.status !== 200) throw new Error(`SCA page ${url} answered ${response.status}: ${html}`);
    pages.push(html);
    return html;
  };
  const submit = async (url: string, form: URLSearchParams): Promise<string> => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: form.toString(),
      redirect: "manual",
    });
    const text = await response.text();
    if (response.status !== 303) throw new Error(`SCA form answered ${response.status}: ${text}`);
    return new URL(response.headers.get("location")!, url).href;
  };

  let html = await open(scaRedirect);
  const token = (page: string) => /name="token" value="([^"]+)"/.exec(page)![1]!;
  if (choices.cancel === "at-identify") {
    return { redirect: new URL(await submit(scaRedirect, form(token(html), "cancel"))), pages };
  }
  const next = await submit(
    scaRedirect,
    form(token(html), "identify", [
      ["identity", choices.identity],
      ["code", choices.code ?? SANDBOX_ONE_TIME_CODE],
    ]),
  );
  html = await open(next);
  if (choices.cancel === "after-identify") {
    return { redirect: new URL(await submit(scaRedirect, form(token(html), "cancel"))), pages };
  }
  const ticked = [...html.matchAll(/name="account" value="([^"]+)" checked/g)].map((m) => m[1]!);
  const agreement = choices.agreement ?? /name="agreement" value="([^"]+)"[^>]*checked/.exec(html)?.[1];
  const fields: [string, string][] = [
    ...(choices.accounts ?? ticked).map((id): [string, string] => ["account", id]),
    ...(agreement !== undefined ? ([["agreement", agreement]] as [string, string][]) : []),
    ...(/name="context" value="(\w+)"/.exec(html)
      ? ([["context", /name="context" value="(\w+)"/.exec(html)![1]!]] as [string, string][])
      : []),
  ];
  return { redirect: new URL(await submit(scaRedirect, form(token(html), "authorise", fields))), pages };
}

function form(token: string, action: string, fields: readonly [string, string][] = []): URLSearchParams {
  return new URLSearchParams([["token", token], ["action", action], ...fields]);
}
