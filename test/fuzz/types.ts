/**
 * The fuzz run's vocabulary: a family gets a `CaseContext` (a seeded Rng, the TPPs, a signer and
 * `exchange`) and runs one case; an exchange is one connection's writes and the requests they
 * hold, in wire order, each with what the harness may expect of it. Egress families (target
 * `egress`) get an `EgressCaseContext` instead: the application's side of the egress gateway,
 * which signs what it is sent.
 */

import type { DevPki } from "@psd2-gateway/dev-pki";
import type { KeyDirectoryServer } from "../helpers/key-directory.js";
import type { Rng } from "./prng.js";
import type { ExchangeOutcome, ParsedResponse, Write } from "./raw-client.js";
import type { RawRequest, SignSpec } from "./request.js";
import type { FuzzTpp, TppSet } from "./tpps.js";

/**
 * forward: a valid request; it must be answered by the backend.
 * refuse: must never reach the backend (not even its headers).
 * no-execute: may reach the backend, but never with its whole body (a body that fails a check).
 * any: either, as long as every other invariant holds.
 */
export type Expectation = "forward" | "refuse" | "no-execute" | "any";

/** One request a case sent, and what must (not) happen to it. */
export interface ExpectedRequest {
  /** The fuzz tag in its query (`fz=`): how the backend's record names it. */
  readonly tag: string;
  /** The X-Request-ID as sent, when it carries one the gateway will echo. */
  readonly requestId?: string | undefined;
  /** A few words on what was done to it, for the report. */
  readonly label: string;
  readonly expect: Expectation;
  /** The signer: a forwarded request must carry this TPP's identity to the backend, nothing else. */
  readonly tpp?: FuzzTpp;
  /** Values a client sent in identity/spoofable headers: the backend must never see them. */
  readonly spoofed?: readonly string[];
  /** Headers (lower-case) the backend must see with exactly these values, when forwarded. */
  readonly backendHeaders?: Readonly<Record<string, string>>;
  /** Gateway 5xx answers this request provokes on purpose (502 from a cut backend, 504). */
  readonly allow5xx?: readonly number[];
  /** The target the backend must receive when it is forwarded (the form the role check saw). */
  readonly backendTarget?: string;
  /** Egress: base64 SHA-256 of the body the backend must receive when it is forwarded. */
  readonly backendBodySha256?: string;
  /**
   * Egress, a connection's only request: the gateway's answer to it must be this refusal (or,
   * with `orClose`, the connection may close unanswered: the client was still writing a body).
   */
  readonly refusedWith?: { readonly status: number; readonly code: string; readonly orClose?: boolean };
}

/** One connection: what is written, the requests it holds, how the client ends it. */
export interface CasePlan {
  /**
   * `tcp`: plain TCP to the ingress TLS listener, no handshake (the writes are raw bytes, what
   * comes back is only counted). Default: TLS to ingress, TCP to egress.
   */
  readonly transport?: "tcp";
  /** Connect from this loopback address (127.x.y.z), a client of its own for the per-address cap. */
  readonly localAddress?: string;
  /** Told once the connection is up (TCP, or the TLS handshake done), before the first write. */
  readonly onConnected?: () => void;
  /** The requests, in the order written. */
  readonly requests: readonly ExpectedRequest[];
  readonly writes: readonly Write[];
  /** After the writes: read until the sentinel's answer or the close (default), half-close, or cut. */
  readonly after?: "read" | "fin" | "cut";
  /** How long after the last write the FIN or the cut comes. */
  readonly afterMs?: number;
  /** Write a sentinel request last whose answer ends the exchange (default: unless fin/cut). */
  readonly sentinel?: boolean;
  readonly deadlineMs?: number;
  /** The client does not wait for every answer: an executed request may go unanswered. */
  readonly abandons?: boolean;
  /** The client writes everything before it reads anything (its socket paused meanwhile). */
  readonly readAfterWrites?: boolean;
  /** Positions of the answers (counted from 0) that answer HEAD requests: no body follows them. */
  readonly bodiless?: readonly number[];
}

export interface ExchangeResult {
  readonly outcome: ExchangeOutcome;
  /** The backend's answer to the request tagged `tag`, when the client got it. */
  backendAnswer(tag: string): ParsedResponse | undefined;
  /** The gateway's refusal echoing `requestId`, when the client got one. */
  refusal(requestId: string): ParsedResponse | undefined;
  /** How many times the backend has received the request tagged `tag` so far. */
  backendSaw(tag: string): number;
}

/**
 * The connection limits both fuzz gateways listen with (gateway.ts, short so that each bites
 * within a case), in ms, and Node's own margins on them.
 */
export interface ListenLimits {
  readonly maxConnectionsPerAddress: number;
  readonly tlsHandshakeTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** How often Node looks for heads and bodies past their timeouts (src/listener/guard.ts). */
  readonly checkIntervalMs: number;
  /** What Node adds to the keep-alive timeout before it closes (server.keepAliveTimeoutBuffer). */
  readonly keepAliveBufferMs: number;
}

/** A family's own invariant: counted as passed, or reported as a violation of `kind`. */
export type FamilyCheck = (
  ok: boolean,
  kind: string,
  label: string,
  expected: string,
  got: () => string,
) => boolean;

export interface CaseContext {
  readonly rng: Rng;
  readonly family: string;
  readonly caseIndex: number;
  /** The ingress gateway's TLS port (what it writes in X-Forwarded-Port). */
  readonly gatewayPort: number;
  readonly limits: ListenLimits;
  check: FamilyCheck;
  readonly pki: DevPki;
  readonly tpps: TppSet;
  readonly maxBodyBytes: number;
  /** The TPPs' key directory the gateway resolves a kid in (ingress.ts KEY_DIRECTORY): a family may publish. */
  readonly keyDirectory: KeyDirectoryServer;
  /** A fresh, run-unique fuzz tag. */
  tag(): string;
  /** Signs a request (a fresh tag unless given). */
  sign(spec: Omit<SignSpec, "tag"> & { readonly tag?: string }): Promise<{
    request: RawRequest;
    requestId: string;
    tag: string;
  }>;
  /** Runs one connection's exchange and checks every invariant on it. */
  exchange(plan: CasePlan): Promise<ExchangeResult>;
}

export interface Family {
  readonly name: string;
  /** Share of the run's requests, relative to the others. */
  readonly weight: number;
  /** The ingress gateway (the default) over TLS, as a TPP reaches the bank. */
  readonly target?: "ingress";
  run(ctx: CaseContext): Promise<void>;
}

/** How the fuzz egress gateway's bank profiles are reached and where they send. */
export interface EgressBanks {
  /** The `bank` profile: this path prefix, sent below `bankBase` on the backend (default signing rules). */
  readonly prefix: string;
  readonly bankBase: string;
  /** The `alt` profile: this Host (any path), sent below `altBase` (Java-style signing rules). */
  readonly altHost: string;
  readonly altBase: string;
}

export interface EgressCaseContext {
  readonly rng: Rng;
  readonly family: string;
  readonly caseIndex: number;
  readonly limits: ListenLimits;
  check: FamilyCheck;
  readonly banks: EgressBanks;
  /** The egress listener's port (plain HTTP on 127.0.0.1), for a family that makes its own requests. */
  readonly gatewayPort: number;
  /** A request the family made itself (not through `exchange`), counted in the run and its family's stats. */
  counted(outcome: "forwarded" | "refused" | "unanswered"): void;
  /** The egress gateway's maxBodyBytes. */
  readonly maxBodyBytes: number;
  /** A fresh, run-unique fuzz tag. */
  tag(): string;
  /** Runs one connection's exchange with the egress listener and checks every invariant on it. */
  exchange(plan: CasePlan): Promise<ExchangeResult>;
}

export interface EgressFamily {
  readonly name: string;
  readonly weight: number;
  /** The egress gateway over plain HTTP, as the TPP's application reaches it. */
  readonly target: "egress";
  run(ctx: EgressCaseContext): Promise<void>;
}

export type AnyFamily = Family | EgressFamily;
