/**
 * The usual integration set-up in one call: a recording backend and a gateway in front of it,
 * started once for the enclosing `describe` (or file), the backend's record and behaviour reset
 * before each test, both closed afterwards.
 *
 *     const env = useGatewayAndBackend({ config: { verification: { maxBodyBytes: 1024 } } });
 *     it("…", async () => {
 *       const r = await signedCall(env.gw, { signer: env.gw.pki.tppA.qseal, target: "/v1/accounts" });
 *       expect(env.backend.requests).toHaveLength(1);
 *     });
 */

import { afterAll, beforeAll, beforeEach } from "vitest";
import type { DevPki } from "../../src/cli/dev-pki.js";
import { type GatewayOptions, startTestGateway, type TestGateway, testPki } from "./gateway-fixture.js";
import { type RecordingBackend, startRecordingBackend } from "./recording-backend.js";

export type GatewayAndBackendOptions = Omit<GatewayOptions, "backendUrl">;

export interface GatewayAndBackend {
  /** The gateway (readable from `beforeAll` on). */
  readonly gw: TestGateway;
  /** The backend behind it; empty and answering 200 at the start of each test. */
  readonly backend: RecordingBackend;
}

/**
 * Nothing should still be in flight when a suite ends; a connection left half-sent by a test is
 * cut after this long instead of the configured shutdown grace (25 s).
 */
const CLOSE_GRACE_MS = 1_000;

/**
 * Registers the hooks and returns a handle whose `gw` and `backend` are set once `beforeAll` ran.
 * `options` may be a function of the test PKI, for set-ups that write files first (a register).
 */
export function useGatewayAndBackend(
  options:
    | GatewayAndBackendOptions
    | ((pki: DevPki) => GatewayAndBackendOptions | Promise<GatewayAndBackendOptions>) = {},
): GatewayAndBackend {
  let started: { gw: TestGateway; backend: RecordingBackend } | undefined;

  beforeAll(async () => {
    const resolved = typeof options === "function" ? await options(await testPki()) : options;
    const backend = await startRecordingBackend();
    try {
      started = { backend, gw: await startTestGateway({ ...resolved, backendUrl: backend.url }) };
    } catch (error) {
      await backend.close();
      throw error;
    }
  });
  afterAll(async () => {
    const running = started;
    started = undefined;
    await running?.gw.close(CLOSE_GRACE_MS);
    await running?.backend.close();
  });
  beforeEach(() => started?.backend.reset());

  const get = (): { gw: TestGateway; backend: RecordingBackend } => {
    if (!started)
      throw new Error("useGatewayAndBackend: the gateway is not running (read it inside a test or hook)");
    return started;
  };
  return {
    get gw() {
      return get().gw;
    },
    get backend() {
      return get().backend;
    },
  };
}
