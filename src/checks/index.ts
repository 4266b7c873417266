/**
 * The named checks of a TPP request and their runner, shared by ingress mode (every request) and
 * `psd2-gateway verify` (explain mode): one list, no second copy of the rules.
 */

export { type CharacterPolicy, checkHeaderCharacters, PERMISSIVE_POLICY, Utf8Scanner } from "./characters.js";
export {
  type CertificateVerifier,
  CheckContext,
  type Route,
  type TppIdentity,
  type TrustedCertificate,
} from "./context.js";
export { describeCavage, type SignedParts } from "./dialects/cavage.js";
export {
  type CavageResponseOptions,
  cavageResponseChecks,
  type DialectExplanation,
  type DialectUnit,
  dialectNames,
  dialectUnit,
  dialectUnits,
  type ExplainedResponse,
  type JadesResponseVerifierOptions,
  jadesResponseChecks,
  type RequestOfResponse,
  type RequestSigning,
  ResponseCheck,
  type ResponseCheckInput,
  type ResponseExplaining,
  type ResponseSignerInput,
  type ResponseSlots,
  type ResponseToVerify,
  type ResponseVerifying,
  type Rfc9421ResponseVerifierOptions,
  registerDialect,
  requestIdStep,
  requestMessage,
  responseOutline,
  rfc9421ResponseChecks,
  type SignerInput,
  type SignResponse,
  StepsResponseVerifier,
  type UkObResponseVerifierOptions,
  ukObResponseChecks,
} from "./dialects/index.js";
export {
  type Authenticates,
  CAVAGE_ONLY,
  type Dialect,
  type DialectPolicy,
  type DialectRoute,
  dialectChooser,
  dialectsPresent,
  headBoundByTls,
  verifiedBeforeSending,
} from "./dialects.js";
export { checkRequiredHeaders, hasBody } from "./required-headers.js";
export { type RoleRoute, RoleTable, routeClass, routingPath, underPrefix } from "./routes.js";
export {
  Chain,
  type Holder,
  type MaybePromise,
  NO_COUNTS,
  type ResponseHold,
  runSteps,
  type Step,
  type StepCounts,
  type StepObserver,
  type StepResult,
  type StepTrace,
  sumCounts,
} from "./runner.js";
export {
  type CheckOptions,
  type ClientCertificatePolicy,
  moreThanOneHost,
  REPLAY_CLOCK_MARGIN_MS,
  RESPONSE_SIGNING,
  type ResponseSigner,
  requestChecks,
} from "./steps.js";
