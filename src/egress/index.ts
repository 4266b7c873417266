/** Egress mode's public surface: bank routing, the request handler and response verification. */

export {
  type BankProfile,
  createEgressHandler,
  type EgressHandlerOptions,
  type EgressRequestChain,
  egressRequestChain,
  GATEWAY_WRITTEN_HEADERS,
  ORIGIN_HEADER,
  type ResponseVerificationMode,
} from "./handler.js";
export { JadesResponseVerifier, jadesResponseChecks } from "./jades-response-verifier.js";
export { RESPONSE_SIGNATURE_HEADER } from "./response-signature.js";
export {
  type RequestOfResponse,
  ResponseCheck,
  type ResponseToVerify,
  ResponseVerifier,
  type ResponseVerifierOptions,
  type ResponseVerifying,
  responseChecks,
  StepsResponseVerifier,
} from "./response-verifier.js";
export { Rfc9421ResponseVerifier, rfc9421ResponseChecks } from "./rfc9421-response-verifier.js";
export { BankRouter, type Route } from "./router.js";
export { UkObResponseVerifier, ukObResponseChecks } from "./ukob-response-verifier.js";
