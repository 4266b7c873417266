/**
 * The part of joyent's http-signature 1.4 (CommonJS, untyped) the interop tests use.
 * See node_modules/http-signature/lib/{signer,parser,verify}.js.
 */
declare module "http-signature" {
  /** What `sign` needs: an http.ClientRequest before its headers are sent. */
  interface SignableRequest {
    readonly method: string;
    readonly path: string;
    getHeader(name: string): unknown;
    setHeader(name: string, value: string): unknown;
  }

  interface SignOptions {
    keyId: string;
    /** PEM private key (sshpk parses it). */
    key: string | Buffer;
    /** Header names to sign in order; default `["date"]`, and then no `headers` parameter is written. */
    headers?: string[];
    algorithm?: string;
    /** Default `Authorization` (with a `Signature ` prefix); `Signature` writes the bare parameter list. */
    authorizationHeaderName?: string;
  }

  /** What `parseRequest` reads: an http.IncomingMessage. */
  interface ParsableRequest {
    readonly headers: Readonly<Record<string, string | string[] | undefined>>;
    readonly method?: string | undefined;
    readonly url?: string | undefined;
    readonly httpVersion: string;
  }

  interface ParseOptions {
    /** Headers that must be among the signed ones (default `["date"]`). */
    headers?: string[];
    /** Allowed Date deviation in seconds (default 300). */
    clockSkew?: number;
    algorithms?: string[];
    authorizationHeaderName?: string;
    strict?: boolean;
  }

  interface ParsedSignature {
    readonly scheme: string;
    readonly params: {
      readonly keyId: string;
      readonly algorithm: string;
      readonly headers: string[];
      readonly signature: string;
    };
    readonly signingString: string;
    readonly algorithm: string;
    readonly keyId: string;
  }

  interface HttpSignature {
    sign(request: SignableRequest, options: SignOptions): boolean;
    /** Throws (InvalidHeaderError, MissingHeaderError, ExpiredRequestError, …) on anything it refuses. */
    parseRequest(request: ParsableRequest, options?: ParseOptions): ParsedSignature;
    /** `publicKey`: PEM (sshpk parses it). */
    verifySignature(parsed: ParsedSignature, publicKey: string | Buffer): boolean;
  }

  const httpSignature: HttpSignature;
  export = httpSignature;
}
