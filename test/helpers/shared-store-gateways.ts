/**
 * What two gateways sharing one limit store must show, whatever the store's topology (one Redis,
 * a Cluster, Sentinel): one limit between them, and no replay across them.
 */

import { expect } from "vitest";
import { prepareSignedCall, send, type TestGateway } from "./gateway-fixture.js";
import type { RecordingBackend } from "./recording-backend.js";

/** A call without the PSU present (no PSU-IP-Address): the unattended limit applies. */
export const UNATTENDED = { omitHeaders: ["PSU-IP-Address"] } as const;

/**
 * 50 concurrent unattended balance reads of one account, alternating gateways: exactly `limit` pass
 * (SPEC 8's 4, or a limit the TPP agreed).
 */
export async function expectLimitOfFiftyAcross(
  a: TestGateway,
  b: TestGateway,
  backend: RecordingBackend,
  account: string,
  limit = 4,
): Promise<void> {
  const prepared = await Promise.all(
    Array.from({ length: 50 }, () =>
      prepareSignedCall({
        signer: a.pki.tppA.qseal,
        target: `/v1/accounts/${account}/balances`,
        ...UNATTENDED,
      }),
    ),
  );
  const results = await Promise.all(
    prepared.map((p, i) => send(i % 2 === 0 ? a : b, p.method, p.target, p.headers)),
  );
  expect(results.filter((r) => r.status === 200)).toHaveLength(limit);
  expect(results.filter((r) => r.status === 429)).toHaveLength(50 - limit);
  expect(backend.requests).toHaveLength(limit);
}

/** A request answered by one gateway is refused as a replay by the other. */
export async function expectReplayRefusedAcross(a: TestGateway, b: TestGateway): Promise<void> {
  const p = await prepareSignedCall({ signer: a.pki.tppA.qseal, target: "/v1/accounts" });
  expect((await send(a, p.method, p.target, p.headers)).status).toBe(200);
  const again = await send(b, p.method, p.target, p.headers);
  expect(again.status).toBe(400);
  expect(again.json.tppMessages?.[0]?.text).toContain("already used");
}
