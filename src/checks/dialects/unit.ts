/**
 * What a signing dialect is to the house: one unit, listed in one table (index.ts), or added to it
 * with `registerDialect`. A unit says how a request shows it, the headers it requires, how a TPP
 * signs in it, what its signature authenticates, which of its steps verifies the signature, what
 * `verify` explains of it, how the gateway signs requests in it and answers to requests in it, and
 * how a bank's answers in it are checked, and builds its request steps for their
 * places in the chain's generic order (steps.ts `requestChecks`): its time check before the digests,
 * its body digest, its parsing before the certificate, its keyId check after it, its coverage and
 * signature last. Its per-request state lives in the context's one `dialectState` slot, read
 * through an accessor of the unit's own (`stateOf`).
 */

import type { KeyObject } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { z } from "zod";
import type { Rejection } from "../../errors.js";
import type { AlgorithmName, HeaderMap, RequestToSign } from "../../signature/index.js";
import type { HttpHeadersPayloadStyle } from "../../signature/jws/index.js";
import type { RequestMessage } from "../../signature/rfc9421/index.js";
import type { CertificateVerifier, CheckContext } from "../context.js";
import type { Authenticates, Dialect } from "../dialect-names.js";
import type { Step } from "../runner.js";
import type { ResponseCheck } from "./response-outline.js";

/**
 * A dialect's config fragment: its own options under `verification.dialects.<key>`, validated (with
 * its defaults) by its schema; config/schema.ts composes the units' fragments, so a dialect
 * registered from outside brings its options with it.
 */
export interface DialectConfig<Own = unknown> {
  /** Its key under `verification.dialects` (camelCase: `ukOb`). */
  readonly key: string;
  /** Its options' schema: a strict object, every key with its default (its unit's `defaults` are its output for `{}`). */
  readonly verification: z.ZodType<Own>;
  /** A bank profile's rules for signing in it (`banks[].signing.<key>`), a strict object with defaults. */
  readonly signing?: z.ZodType;
  /**
   * Its keys of a bank profile's `responses` (checking answers in it, read by `responseChecks` from
   * `input.responses`), each with its default; named after the dialect, as they share one object.
   */
  readonly responses?: Readonly<Record<string, z.ZodType>>;
}

/** What every dialect's steps may read of the chain's options. */
export interface SharedDialectOptions {
  readonly now: () => number;
  /** The Date tolerance: how far a signed time may be from the clock either way. */
  readonly dateToleranceMs: number;
  /** draft-cavage's algorithms (`verification.algorithms`). */
  readonly algorithms: readonly AlgorithmName[];
  readonly keyIdPolicy: "strict" | "relaxed";
  readonly allowDecimalSerial: boolean;
}

/** A dialect's request steps, by their place in the chain. */
export interface DialectSteps {
  /** Before the digests: the time the request was signed, when a header carries it (Date). */
  readonly time?: readonly Step<CheckContext>[];
  /** The body's digest, hashed as it streams (one the generic `digest` step does not read). */
  readonly digest?: readonly Step<CheckContext>[];
  /** Before the certificate: the signature's header read, its times against the clock. */
  readonly parse: readonly Step<CheckContext>[];
  /** After the certificate: the keyId naming it. */
  readonly keyId?: readonly Step<CheckContext>[];
  /** The coverage, claims and the signature itself (and its body phases for a body dialect). */
  readonly verify: readonly Step<CheckContext>[];
  /**
   * How long after now a request could still pass this dialect's time checks at most: the replay
   * record's life when a time step set none.
   */
  readonly longestAcceptanceMs: number;
}

/** What `verify` shows of a request signed in the dialect (the CLI renders it). */
export interface DialectExplanation {
  /** Where the signing certificate travels, as the explanation names it. */
  readonly certificateHeader: string;
  /** The signing certificate sent, base64 DER. */
  readonly certificate?: string | undefined;
  /** The keyId (or keyid) sent. */
  readonly keyId?: string;
  readonly signedHeaders?: readonly string[];
  /** What was signed, as text to show. */
  readonly signingString?: string;
  /** The body's digest as computed, with its length. */
  readonly digest?: string;
  /** A JWS's protected header. */
  readonly protectedHeader?: Readonly<Record<string, unknown>>;
}

/** What a signer is made of: the QSealC, where the request goes and the profile's rules. */
export interface SignerInput<Rules = unknown> {
  readonly privateKey: KeyObject;
  readonly certificateDer: Uint8Array;
  /** The bank's URL (a dialect signing `@target-uri` takes its scheme). */
  readonly url: string;
  /** The bank profile's `signing` rules (config `banks[].signing`): each unit reads its own keys. */
  readonly rules: Rules;
  /**
   * `latin1` when the header values come from Node's HTTP server (one char per byte); `utf-8`
   * when they are text, as on a command line.
   */
  readonly headerEncoding: "latin1" | "utf-8";
}

/** A request signer in a dialect: what egress, `psd2-gateway sign` and the library sign with. */
export interface RequestSigning {
  /** The keyId or keyid it names the QSealC by (logged at start and on reload). */
  readonly keyId: string;
  sign(request: RequestToSign): Promise<Record<string, string>>;
}

/**
 * What a dialect's response checks are made of (egress, `verify --response`): the bank's
 * certificate verifier and the profile's response rules (config `banks[].responses`; each unit reads
 * its own keys, such as `rfc9421Algorithms`, and defaults the ones absent) and signing rules.
 */
export interface ResponseCheckInput<Rules = unknown> {
  readonly certificates: CertificateVerifier;
  /** Lower-case name of the header a bank sends its certificate in (dialects that use one). */
  readonly certificateHeader: string;
  readonly dateToleranceMs: number;
  readonly now: () => number;
  readonly responses: Readonly<Record<string, unknown>>;
  /** The profile's `signing` rules; absent on the command line without `--profile`. */
  readonly signing?: Partial<Rules> | undefined;
}

/**
 * What a dialect's signer of the backend's answers is made of (ingress `responseSigning`): the
 * bank's QSealC, the config's response-signing rules and the dialect's own options.
 */
export interface ResponseSignerInput<Own = unknown> {
  readonly privateKey: KeyObject;
  readonly certificateDer: Uint8Array;
  /** Where the bank's QSealC travels, for a dialect that sends it in a header (`responseSigning.certificateHeader`). */
  readonly certificateHeader: string;
  /** Config `responseSigning`: each unit reads its own keys (draft-cavage `headers`, RFC 9421 `rfc9421Profile`). */
  readonly rules: Readonly<Record<string, unknown>>;
  /** Its own options (config `verification.dialects.<name>`), its defaults where absent. */
  readonly own: Own;
}

/**
 * Signs one answer to a request verified in the dialect: the headers to add. `headers` are the
 * answer's as they will be sent (each value one string), `request` the chain's context.
 */
export type SignResponse = (
  body: Buffer,
  headers: Readonly<Record<string, string>>,
  status: number,
  request: CheckContext,
) => Promise<Record<string, string>>;

/** The answer `verify --response` explains, beside the check its steps ran over. */
export interface ExplainedResponse {
  /** The request it answers (empty without one). */
  readonly method: string;
  readonly target: string;
  /** The body, when the dump holds one. */
  readonly body: Buffer | undefined;
  /** The header the bank sends its certificate in, as the user wrote it. */
  readonly certificateHeader: string;
}

/** What `verify --response` needs to know of a dialect's answers, and what it shows of one. */
export interface ResponseExplaining {
  /** Its response checks that need the body: left out, and said so, when the dump holds none. */
  readonly needsBody: readonly string[];
  /** What the body is checked against, as "the body against …" names it ("Digest"). */
  readonly bodyCheckedAgainst: string;
  /** What would fail for want of the request rather than for the answer: said under "not checked". */
  withoutRequest?(headers: HeaderMap): readonly string[];
  /** What it shows of the answer once its checks ran (their state is in the check's dialect slot). */
  explain(check: ResponseCheck, response: ExplainedResponse): DialectExplanation;
}

/** A signed response as sent or received, to rebuild what its signature covers (evidence records). */
export interface SignedResponseInput {
  /** Lower-case names; values as sent or received (Latin-1 strings). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly status: number;
  /** The request it answers, as RFC 9421's `;req` components read it. */
  readonly request?: RequestMessage | undefined;
  /** JAdES: how the profile builds the sigD.pars payload. */
  readonly payloadStyle?: HttpHeadersPayloadStyle | undefined;
  /** The signer's public key: the algorithm of a signature that names none. */
  readonly key?: KeyObject | undefined;
}

/** What a response's signature covers: the exact bytes, the signature, the dialect and algorithm. */
export interface SignedResponseParts {
  readonly bytes: Buffer;
  readonly signature: Buffer;
  /** As request records name it (`rfc9421:rsa-pss-sha512`, `jades:PS256`; draft-cavage its algorithm). */
  readonly signedWith: string;
}

export interface DialectUnit<Own = unknown, Rules = unknown> {
  readonly name: Dialect;
  /** Its name as `verify` prints it: the headers and the specification. */
  readonly title: string;
  readonly authenticates: Authenticates;
  /** What a TPP should send to sign in it, for refusals that say what would be accepted. */
  readonly howToSign: string;
  /** The step that verifies its signature: a chain accepting the dialect must have it. */
  readonly signatureStep: string;
  /**
   * Its responses are signed over parts of the request they answer (RFC 9421's `;req`): egress
   * keeps what it sent (the target URI, the headers) for the response check.
   */
  readonly responsesBindRequest?: boolean;
  /** Its own options' defaults (what its `config` fragment makes of `{}`; without one, its steps' options). */
  readonly defaults: Own;
  /** Its config fragment (`verification.dialects.<key>`); none: it has no options to configure. */
  readonly config?: DialectConfig<Own>;
  /**
   * Whether a request carries its signature, from the headers alone. Runs per request: no
   * allocation. Two dialects may claim one request; the path's configured preference decides.
   */
  detect(headers: IncomingHttpHeaders): boolean;
  /**
   * The headers a request in this dialect must carry besides every request's (its certificate's,
   * its digest's when `withBody`), checked by `required-headers`.
   */
  requiredHeaders?(headers: IncomingHttpHeaders, withBody: boolean): Rejection | undefined;
  steps(shared: SharedDialectOptions, own: Own): DialectSteps;
  /** The signature value its steps read, for the evidence record. */
  signatureBytes(c: CheckContext): Buffer;
  /**
   * The exact bytes the signature covers once the body is whole, for the evidence record, when its
   * steps did not keep them in `signingString` (a signature over the body).
   */
  signedBytes?(c: CheckContext, body: Buffer | undefined): Buffer;
  /** What `verify` shows of a request in this dialect, after the chain ran over it. */
  explain(c: CheckContext, body: Buffer | undefined): DialectExplanation;
  /** A request signer in this dialect (egress, `sign`). */
  signer(input: SignerInput<Rules>): RequestSigning;
  /**
   * Its checks of a bank's signed response, built from the one outline (response-outline.ts).
   * Absent: a bank profile cannot ask to verify responses in it (refused when config loads).
   */
  responseChecks?(input: ResponseCheckInput<Rules>): Step<ResponseCheck>[];
  /**
   * What a signed response in it covers, rebuilt from the answer (the evidence record and its
   * dispute bundle); undefined when its signature cannot be read. Nothing is verified here.
   */
  responseSigned?(input: SignedResponseInput): SignedResponseParts | undefined;
  /** What `verify --response` shows of an answer in it (with `responseChecks`). */
  readonly responseExplaining?: ResponseExplaining;
  /**
   * Its signer of the backend's answers to requests in it (ingress `responseSigning`), built once.
   * Absent: a config signing responses cannot accept the dialect (refused when config loads).
   */
  responseSigner?(input: ResponseSignerInput<Own>): SignResponse;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** A signing string's bytes (latin1 text) shown as UTF-8 when they are UTF-8; other bytes as \xNN. */
export function readable(latin1: string): string {
  const bytes = Buffer.from(latin1, "latin1");
  try {
    return UTF8.decode(bytes);
  } catch {
    return latin1.replace(/[\x80-\xff]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  }
}
