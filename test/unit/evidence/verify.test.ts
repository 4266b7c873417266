/** The checkpoint keys as verify asks for them (src/evidence/verify.ts checkpointKeys); chains are verified in the stores' tests. */

import { describe, expect, it } from "vitest";
import { newCheckpointKey } from "../../../src/evidence/checkpoint.js";
import { checkpointKeys } from "../../../src/evidence/verify.js";

describe("checkpointKeys", () => {
  it("parses each key once, and answers undefined for a key not kept or not parsable", () => {
    const key = newCheckpointKey();
    const pem = key.publicKey.export({ type: "spki", format: "pem" }).toString();
    const asked: string[] = [];
    const pems: Record<string, string> = { [key.id]: pem, broken: "not a key" };
    const keyOf = checkpointKeys((id) => {
      asked.push(id);
      return pems[id];
    });
    for (let i = 0; i < 3; i++) {
      expect(keyOf(key.id)?.equals(key.publicKey)).toBe(true);
      expect(keyOf("broken")).toBeUndefined();
      expect(keyOf("missing")).toBeUndefined();
    }
    expect(asked).toEqual([key.id, "broken", "missing"]);
  });
});
