/**
 * The built-in demo bank ("the legacy core") that `npm start`, the tests and the benchmarks put
 * behind the gateway. See server.ts for the behaviour and psu.ts for how PSU-ID picks a customer.
 */

export { DEFAULT_SEED } from "./data.js";
export { GATEWAY_SECRET_HEADER, MIN_GATEWAY_SECRET_LENGTH } from "./gateway-proof.js";
export { DEFAULT_IDENTITY_HEADERS, type GatewayIdentity, type IdentityHeaderNames } from "./identity.js";
export type {
  Account,
  Agreement,
  BankData,
  BookedTransaction,
  CardAcceptorAddress,
  CardAccount,
  CardTransaction,
  Customer,
  CustomerType,
  Money,
  PendingTransaction,
} from "./model.js";
export { DOMESTIC_PRODUCT } from "./payment-body.js";
export { DEFAULT_MAX_ROOMS } from "./rooms.js";
export { SANDBOX_ONE_TIME_CODE } from "./sca.js";
export {
  createSandboxBank,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_PUBLIC_URL,
  DEFAULT_SCA_LINK_TTL_SECONDS,
  type ListenAt,
  type SandboxBank,
  type SandboxBankOptions,
  type SandboxListener,
  type SandboxListeners,
} from "./server.js";
export { type RoomSnapshot, STATE_FILE_VERSION, StateFileError, type StateSnapshot } from "./state-file.js";
