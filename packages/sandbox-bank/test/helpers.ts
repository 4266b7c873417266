/** Starting a real sandbox bank on loopback and talking to it the way a client would. */

import { connect } from "node:net";
import {
  createSandboxBank,
  GATEWAY_SECRET_HEADER,
  type SandboxBank,
  type SandboxBankOptions,
} from "../src/index.js";

/** Thursday 13 August 2026, 10:00 UTC: every relative date in the tests is computed from it. */
export const NOW = Date.parse("2026-08-13T10:00:00Z");
export const TODAY = "2026-08-13";

export function daysBefore(days: number): string {
  return new Date(NOW - days * 86_400_000).toISOString().slice(0, 10);
}

/** SPEC 2.1 Link, as the bank sends it. */
export interface Link {
  href: string;
  verbs: string[];
}

/** SPEC 2.1: a sandbox customer, as the customer list and the create operation send it. */
export interface CustomerJson {
  customerId: string;
  customerNumber: string;
  customerType: string;
  customerName: string;
  agreements: {
    id: string;
    name: string;
    engagements: string[];
    _links: { self: Link; engagements: Link };
  }[];
  accounts: string[];
  cardAccounts: string[];
  _links: { self: Link };
}

export interface RunningBank {
  readonly bank: SandboxBank;
  readonly listener: {
    /** The API's URL and port (what the gateway calls). */
    readonly url: string;
    readonly port: number;
    /** The SCA page's listener (what browsers open). */
    readonly scaUrl: string;
    close(): Promise<void>;
  };
  /**
   * Fetches a path of the bank and reads the JSON answer: /sca/… on the SCA listener, the rest on
   * the API with the gateway's secret and, unless the call names one, the TPP {@link TEST_TPP}.
   */
  call(path: string, init?: RequestInit): Promise<Answer>;
}

/** What the tests' gateway would be: the secret it adds to every call. */
export const TEST_GATEWAY_SECRET = "test-gateway-secret-0123456789abcdef";
/** The TPP a call names when the test does not say. */
export const TEST_TPP = "PSDNO-FSA-TEST";

/** `init`'s headers with the gateway's secret, and the default TPP where the call names none. */
export function throughGateway(
  headers?: ConstructorParameters<typeof Headers>[0],
  organizationHeader = "x-tpp-organization-id",
): Headers {
  const out = new Headers(headers);
  out.set(GATEWAY_SECRET_HEADER, TEST_GATEWAY_SECRET);
  if (!out.has(organizationHeader)) out.set(organizationHeader, TEST_TPP);
  return out;
}

/** The raw header lines a gateway adds, for {@link sendRaw}. */
export const RAW_GATEWAY_HEADERS = `${GATEWAY_SECRET_HEADER}: ${TEST_GATEWAY_SECRET}\r\nX-TPP-Organization-Id: ${TEST_TPP}\r\n`;

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body; the test fails if the bank answered something that is not JSON. */
  readonly json: unknown;
}

export async function startBank(options: Partial<SandboxBankOptions> = {}): Promise<RunningBank> {
  const bank = createSandboxBank({ clock: () => NOW, gatewaySecret: TEST_GATEWAY_SECRET, ...options });
  const listeners = await bank.listen();
  const organizationHeader =
    options.identityHeaders?.organizationId?.toLowerCase() ?? "x-tpp-organization-id";
  return {
    bank,
    listener: {
      url: listeners.api.url,
      port: listeners.api.port,
      scaUrl: listeners.sca.url,
      close: () => listeners.close(),
    },
    call: async (path, init) => {
      const page = path.startsWith("/sca/");
      const response = await fetch((page ? listeners.sca.url : listeners.api.url) + path, {
        ...init,
        headers: page ? new Headers(init?.headers) : throughGateway(init?.headers, organizationHeader),
      });
      const text = await response.text();
      return { status: response.status, headers: response.headers, text, json: JSON.parse(text) as unknown };
    },
  };
}

/** Sends bytes as they are, for request targets that fetch would normalise or refuse. */
export function sendRaw(port: number, request: string): Promise<{ status: number; raw: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? "0");
      resolve({ status, raw });
    });
    socket.write(request);
  });
}

/** The JSON body of a raw HTTP/1.1 answer. */
export function rawBody(raw: string): unknown {
  return JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
}

export function tppCode(json: unknown): string | undefined {
  const messages = (json as { tppMessages?: { category?: string; code?: string }[] }).tppMessages;
  return messages?.[0]?.category === "ERROR" ? messages[0].code : undefined;
}

export function tppText(json: unknown): string {
  return (json as { tppMessages?: { text?: string }[] }).tppMessages?.[0]?.text ?? "";
}

/** Every `amount` member anywhere in a JSON value, with the path that leads to it. */
export function amountsIn(value: unknown, path = "$"): { path: string; value: unknown }[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => amountsIn(item, `${path}[${index}]`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, member]) => [
    ...(key === "amount" ? [{ path: `${path}.${key}`, value: member }] : []),
    ...amountsIn(member, `${path}.${key}`),
  ]);
}
