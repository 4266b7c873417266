/** `trust status`'s text: a register source given by the EBA's metadata URL names the file it holds. */

import { describe, expect, it } from "vitest";
import { renderTrustStatus } from "../../../src/cli/trust.js";

const NOW = Date.parse("2026-11-27T04:00:00Z");
const METADATA = "https://euclid.eba.europa.eu/register/api/filemetadata";
const FILE =
  "https://euclid.eba.europa.eu/register/downloads/PSDMD/20261127/download-PSDMD-202611270000.zip of Fri Nov 27 00:00:16 UTC 2026";

describe("trust status", () => {
  it.each([
    { name: "a metadata source: the file held under its URL", held: FILE, line: `holds ${FILE}` },
    { name: "a source with nothing to add: no such line", held: undefined, line: undefined },
  ])("$name", ({ held, line }) => {
    const text = renderTrustStatus(
      {
        sources: [
          {
            kind: "register",
            source: `eba: ${METADATA}`,
            ...(held ? { held } : {}),
            lastSuccess: NOW - 2000,
            failures: 0,
            size: 1234,
            stale: false,
            failsReadiness: true,
          },
        ],
      },
      NOW,
    ).split("\n");
    expect(text[0]).toMatch(new RegExp(`^register\\s+fresh\\s+eba: ${METADATA}$`));
    // Right under the source's line, before the figures.
    expect(text.findIndex((l) => l.trim().startsWith("holds "))).toBe(line === undefined ? -1 : 1);
    expect(text.find((l) => l.trim().startsWith("holds "))?.trim()).toBe(line);
  });
});
