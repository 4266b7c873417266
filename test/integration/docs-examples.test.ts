/**
 * Every example of README.md and docs/*.md that is not TypeScript or JavaScript (those are
 * readme-snippets.test.ts's), run as a user runs it: shell blocks in bash against the embedded
 * default (`npm start`) and the egress example (`npm run egress`) started from a copy of the built
 * package, configuration fragments validated by the config schema over config/default.yaml.
 *
 * Each fenced block carries `<!-- example: name -->` (run here; a row of SHELL_EXAMPLES or
 * CONFIG_EXAMPLES says what its run must show) or `<!-- example-exempt: name: why -->` on the line
 * before it; the exempted names are listed in EXEMPT, so that list cannot grow unnoticed.
 *
 * The docs name the default ports; the test rewrites each to a free loopback port (in the configs'
 * copies and in the examples' code) so that it can run beside other gateways.
 */

import "reflect-metadata";
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { generateDevPki } from "@psd2-gateway/dev-pki";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { validateConfig } from "../../src/config/load.js";
import { freeLoopbackPort, REPO_ROOT } from "../helpers/gateway-process.js";

interface Example {
  /** The marker's name. */
  readonly name: string;
  /** Why it is not run, for an exempted block. */
  readonly exemptBecause: string | undefined;
  /** The fence's language tag ("" for none). */
  readonly language: string;
  readonly code: string;
  /** The Markdown file, relative to the repository. */
  readonly file: string;
  /** 1-based line of the opening fence in that file. */
  readonly line: number;
}

const FENCE = /^(\s*)```(\S*)\s*$/;
const MARKER = /^\s*<!--\s*example:\s*([a-z0-9-]+)\s*-->\s*$/;
const EXEMPT_MARKER = /^\s*<!--\s*example-exempt:\s*([a-z0-9-]+):\s*(.+?)\s*-->\s*$/;
/** readme-snippets.test.ts runs these. */
const CODE_LANGUAGES = new Set(["ts", "typescript", "js", "javascript", "mjs"]);

/** Every fenced block of a Markdown text but TypeScript and JavaScript, with its marker. */
function examplesOf(markdown: string, file: string): Example[] {
  const lines = markdown.split("\n");
  const blocks: { language: string; code: string; line: number; before: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const end = lines.findIndex((l, j) => j > i && l.trim() === "```");
    if (end < 0) throw new Error(`${file}:${i + 1}: code block never closed`);
    blocks.push({
      language: open[2]!,
      code: `${lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join("\n")}\n`,
      line: i + 1,
      before: lines[i - 1] ?? "",
    });
    i = end;
  }
  return blocks.flatMap((block) => {
    if (CODE_LANGUAGES.has(block.language)) return [];
    const marker = MARKER.exec(block.before);
    const exempt = EXEMPT_MARKER.exec(block.before);
    const name = marker?.[1] ?? exempt?.[1];
    if (!name)
      throw new Error(
        `${file}:${block.line}: a code block without <!-- example: … --> or <!-- example-exempt: … -->`,
      );
    return [
      {
        name,
        exemptBecause: exempt?.[2],
        language: block.language,
        code: block.code,
        file,
        line: block.line,
      },
    ];
  });
}

/** An example's code and the output blocks exempted as its output (`example-exempt: x: output of <name> …`). */
function shownBy(e: Example): string {
  const outputs = EXAMPLES.filter((o) => o.exemptBecause?.startsWith(`output of ${e.name}`) === true);
  return [e.code, ...outputs.map((o) => o.code)].join("");
}

/** A shell example's run: what it must print, all of it shown in the docs too. */
interface ShellRun {
  /** Text the docs show (in the block or a block exempted as its output) that the run prints too. */
  readonly shows: readonly string[];
  /** Examples whose code runs first in the same shell (the function it uses). */
  readonly after?: readonly string[];
  /** The whole output, when the doc promises exactly that. */
  readonly printsExactly?: string;
  /** The example prints a command line the docs say to run: what that run shows. */
  readonly printedLineShows?: readonly string[];
}

const SHELL_EXAMPLES: Record<string, ShellRun> = {
  demo: {
    shows: [
      "201  initiate a payment",
      '{"transactionStatus":"RCVD","paymentId":"',
      "400  body changed after signing (Digest mismatch)",
      "SIGNATURE_INVALID: Digest header is SHA-256=",
      "400  AIS-only TPP tries to pay",
      "ROLE_INVALID: /v1/payments/norwegian-domestic-credit-transfers needs the PSD2 role PSP_PI",
    ],
  },
  "sign-curl": {
    shows: [
      "curl -sS -X GET -H 'TPP-Redirect-URI: https://tpp.example/cb' -H 'PSU-ID: 12866148897'",
      "/certs/dev/trust/demo-root-ca.pem' 'https://localhost:",
    ],
    printedLineShows: ['{"accounts":[{"resourceId":"', '"bban":"97109824996"'],
  },
  "egress-curl": {
    shows: ["HTTP/1.1 200 OK", "psd2-gateway-origin: bank", "psd2-gateway-response-signature: verified"],
  },
  "sign-send": {
    shows: ["GET https://localhost:", "/v1/accounts", "HTTP 200", "response signature: verified"],
  },
  "verify-response": {
    shows: [
      "HTTP 200, the answer to GET /v1/accounts",
      "✓ signature-header      passed",
      "✓ certificate           passed",
      "✓ request-id            passed",
      "Every check passed.",
    ],
  },
  "import-rules": { shows: ["src/cli/demo-packages.ts"], printsExactly: "src/cli/demo-packages.ts\n" },
  "uk-ob-verify": {
    shows: [
      "POST /v1/payments/norwegian-domestic-credit-transfers",
      "signed in UK Open Banking (x-jws-signature over the body)",
      "✓ uk-ob-signature    passed",
      "✓ role               passed",
      "Every check passed.",
      "subject       CN=Demo Payments AS QSealC,organizationIdentifier=PSDNO-FSA-DEMO0001,O=Demo Payments AS,C=NO",
      'alg                              "PS256"',
    ],
  },
  "egress-rfc9421": {
    shows: [
      "HTTP/1.1 200 OK",
      // The FAPI 2.0 response profile: bound to the request's signature, tagged fapi-2-response.
      'signature-input: sig1=("@method";req "@target-uri";req "signature";req;key="sig1" "signature-input";req;key="sig1" "@status"',
      'tag="fapi-2-response"',
      "psd2-gateway-response-signature: verified",
      '"bban":"97109824996","currency":"NOK","name":"Brukskonto Kari Nordmann"',
    ],
  },
  "egress-jades": {
    shows: [
      "HTTP/1.1 200 OK",
      "x-jws-signature: eyJhbGciOiJQUzI1NiIsImI2NCI6ZmFsc2Us",
      "psd2-gateway-response-signature: verified",
    ],
  },
  "trust-status-certificate": {
    shows: [
      "indication    INDETERMINATE / REVOKED_CA_NO_POE  (decided by: revocation)",
      "refusal       400 CERTIFICATE_REVOKED: issuing CA SN=",
      "indication    TOTAL_PASSED",
      "register      PSDNO-FSA-DEMO0001: Demo Payments AS, authorised (source eba); roles PSP_AI, PSP_PI",
    ],
  },
  "admin-host": {
    shows: [
      '{"tppMessages":[{"category":"ERROR","code":"SERVICE_BLOCKED","text":"the admin listener does not answer',
    ],
  },
  "agreed-limits": {
    shows: [
      "HTTP 200",
      "HTTP 429",
      "at most 8 balance calls per 24 h are allowed for this account (the limit the bank agreed with this TPP)",
    ],
  },
  "jades-by-reference": {
    shows: ["GET https://localhost:", "HTTP 200", '"bban":"97109824996"'],
  },
  "sandbox-tpp": { shows: [] },
  "sandbox-customers": {
    after: ["sandbox-tpp"],
    shows: ["/v1/sandbox/customers?withAccounts=true&withAgreements=true"],
  },
  "sandbox-consent": {
    after: ["sandbox-tpp"],
    shows: [
      "POST https://localhost:",
      "/v1/bank-offered-consents",
      "HTTP 201",
      '{"consentStatus":"received","consentId":"',
    ],
  },
};

/** Configuration fragments: each merged over config/default.yaml (its top-level keys replaced) and validated. */
const CONFIG_EXAMPLES = [
  "dialects-config",
  "register-sources-config",
  "evidence-config",
  "evidence-postgres-config",
  "egress-evidence-config",
  "keys-config",
];

/** Blocks not run here, each with its reason in the docs' marker. Adding one means adding it here. */
const EXEMPT = [
  // README.md
  "quick-start", // npm ci && npm start on a clean clone: test/integration/first-success.test.ts
  "demo-output",
  "verify-refused-output",
  "commands",
  // docs/ARCHITECTURE.md, docs/development.md
  "src-layout",
  "import-arrows",
  "packages-layout",
  "missing-demo-package", // its text is test/unit/cli/demo-packages.test.ts's
  "fuzz-failure-output",
  // docs/operations.md
  "start-production",
  "refusal-output",
  "idle-log-line",
  "trust-status-output",
  "trust-status-workers-output",
  "access-line",
  "docker-run",
  "kubernetes-apply",
  "kubernetes-overlay",
  "kubernetes-evidence-postgres",
  "evidence-commands",
  "evidence-postgres-commands",
  // docs/egress.md
  "egress-evidence-bundle",
  // docs/dialects.md
  "keys-refusal-output",
  // docs/sandbox.md
  "sandbox-accounts",
  "sandbox-payment",
];

/** The ports the docs and configs name, each rewritten to a free one. */
const DOC_PORTS = [8443, 8081, 8099, 9090, 8090, 9091] as const;

const MARKDOWN_FILES = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];
const EXAMPLES = MARKDOWN_FILES.flatMap((file) =>
  examplesOf(readFileSync(join(REPO_ROOT, file), "utf8"), file),
);

function example(name: string): Example {
  const found = EXAMPLES.find((e) => e.name === name && e.exemptBecause === undefined);
  if (!found) throw new Error(`no block of ${MARKDOWN_FILES.join(", ")} is marked <!-- example: ${name} -->`);
  return found;
}

describe("the documentation's examples", () => {
  it("are each marked, run here or exempted with a reason, and the exempted ones are the listed ones", () => {
    const names = EXAMPLES.map((e) => e.name);
    expect(new Set(names).size, `an example name is used twice: ${names.join(", ")}`).toBe(names.length);
    const run = EXAMPLES.filter((e) => e.exemptBecause === undefined).map((e) => e.name);
    expect(run.toSorted()).toEqual([...Object.keys(SHELL_EXAMPLES), ...CONFIG_EXAMPLES].toSorted());
    const exempt = EXAMPLES.filter((e) => e.exemptBecause !== undefined).map((e) => e.name);
    expect(exempt.toSorted()).toEqual(EXEMPT.toSorted());
    for (const name of Object.keys(SHELL_EXAMPLES))
      expect(["sh", "console"], `${name} is a shell block or transcript`).toContain(example(name).language);
    for (const name of CONFIG_EXAMPLES) expect(example(name).language, `${name} is YAML`).toBe("yaml");
  });

  it("show in the docs what their run is held to", () => {
    for (const [name, run] of Object.entries(SHELL_EXAMPLES)) {
      const e = example(name);
      for (const shown of run.shows)
        expect(shownBy(e), `${name} (${e.file}:${e.line}) does not show '${shown}'`).toContain(shown);
    }
  });

  it("are found with their markers, an unmarked block refused", () => {
    const found = examplesOf(
      [
        "<!-- example: a -->",
        "```sh",
        "ls",
        "```",
        "",
        "<!-- example-exempt: a-out: output of a -->",
        "```",
        "x",
        "```",
        "```ts",
        "ignored()",
        "```",
        "   <!-- example: b -->",
        "   ```yaml",
        "   k: v",
        "   ```",
      ].join("\n"),
      "docs/x.md",
    );
    expect(found.map((e) => [e.name, e.exemptBecause, e.language, e.code, `${e.file}:${e.line}`])).toEqual([
      ["a", undefined, "sh", "ls\n", "docs/x.md:2"],
      ["a-out", "output of a", "", "x\n", "docs/x.md:7"],
      ["b", undefined, "yaml", "k: v\n", "docs/x.md:14"],
    ]);
    expect(() => examplesOf("```sh\nls\n```\n", "docs/y.md")).toThrow("docs/y.md:1: a code block without");
  });
});

describe.each(CONFIG_EXAMPLES)("the configuration example %s", (name) => {
  it("is valid merged over config/default.yaml", () => {
    const e = example(name);
    const fragment: unknown = parseYaml(e.code);
    expect(typeof fragment === "object" && fragment !== null && !Array.isArray(fragment)).toBe(true);
    const base = parseYaml(readFileSync(join(REPO_ROOT, "config", "default.yaml"), "utf8")) as Record<
      string,
      unknown
    >;
    const merged = { ...base, ...(fragment as Record<string, unknown>) };
    expect(() => validateConfig(merged, `${e.file}:${e.line}`, join(REPO_ROOT, "config"))).not.toThrow();
  });
});

/** A started process of the package's command line and what it wrote. */
interface Started {
  readonly child: ChildProcess;
  output: string;
  readonly exited: Promise<unknown>;
}

function startCli(cwd: string, args: string[], env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, ["dist/main.js", ...args], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const started: Started = { child, output: "", exited: new Promise((r) => child.once("exit", r)) };
  const collect = (chunk: Buffer) => {
    started.output += chunk.toString("utf8");
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  return started;
}

async function waitReady(url: string, what: Started, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (what.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`${url} not ready (last status ${status}):\n${what.output.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A shell block's code; of a `console` transcript, its `$ ` lines, the commands typed. */
function commandsOf(e: Example): string {
  if (e.language !== "console") return e.code;
  return `${e.code
    .split("\n")
    .filter((l) => l.startsWith("$ "))
    .map((l) => l.slice(2))
    .join("\n")}\n`;
}

/** What a user types, made to run here: the scripts' long-running parts started by the test, ports rewritten. */
function runnable(code: string, ports: ReadonlyMap<number, number>): string {
  return code
    .replace(/^npm run egress( &)?.*$/gm, ": # npm run egress: running, started by the test")
    .replace(/\bnpm run demo\b/g, "node dist/main.js demo --url https://localhost:8443")
    .replace(/\b(8443|8081|8099|9090|8090|9091)\b/g, (port) => String(ports.get(Number(port))));
}

function runShell(
  cwd: string,
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", `exec 2>&1\n${script}`], {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
}

describe("the documentation's shell examples, run against npm start and npm run egress", () => {
  let scratch: string;
  const ports = new Map<number, number>();
  const env: NodeJS.ProcessEnv = {};
  const processes: Started[] = [];

  beforeAll(async () => {
    for (const port of DOC_PORTS) ports.set(port, await freeLoopbackPort());
    for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key)) env[key] = value;
    // The shell's `node` is this Node 26, as npm scripts' is; a user's Node 20 hands over to it.
    env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;

    // A checkout as `npm start` leaves it: the built package, its configs (ports rewritten), certs/dev.
    const build = await runShell(REPO_ROOT, "node scripts/build-if-changed.mjs", env);
    expect(build.code, build.output).toBe(0);
    scratch = mkdtempSync(join(tmpdir(), "psd2-docs-examples-"));
    cpSync(join(REPO_ROOT, "package.json"), join(scratch, "package.json"));
    cpSync(join(REPO_ROOT, "dist"), join(scratch, "dist"), { recursive: true });
    symlinkSync(join(REPO_ROOT, "node_modules"), join(scratch, "node_modules"));
    symlinkSync(join(REPO_ROOT, "src"), join(scratch, "src"));
    symlinkSync(join(REPO_ROOT, "packages"), join(scratch, "packages"));
    cpSync(join(REPO_ROOT, "config"), join(scratch, "config"), { recursive: true });
    for (const file of ["default.yaml", "egress.example.yaml"]) {
      const path = join(scratch, "config", file);
      const text = runnable(readFileSync(path, "utf8"), ports);
      const config = parseYaml(text) as Record<string, unknown>;
      // default.yaml leaves admin at its default port, 9090.
      const admin = (config["admin"] ?? {}) as Record<string, unknown>;
      config["admin"] = { ...admin, port: admin["port"] ?? ports.get(9090) };
      writeFileSync(path, toYaml(config));
    }
    // The dev PKI as `npm start` makes it, its certificates naming the demo QTSP's rewritten port.
    await generateDevPki(join(scratch, "certs", "dev"), Date.now(), {
      qtspUrl: `http://127.0.0.1:${ports.get(8099)}`,
    });

    const ingress = startCli(scratch, ["start"], env);
    processes.push(ingress);
    await waitReady(`http://127.0.0.1:${ports.get(9090)}/readyz`, ingress);
    const egress = startCli(scratch, ["start", "--config", "config/egress.example.yaml"], env);
    processes.push(egress);
    await waitReady(`http://127.0.0.1:${ports.get(9091)}/readyz`, egress);
  }, 240_000);

  afterAll(async () => {
    for (const started of processes.toReversed()) {
      started.child.kill("SIGTERM");
      await started.exited;
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it.each(Object.keys(SHELL_EXAMPLES))(
    "%s: runs and prints what the docs show",
    async (name) => {
      const run = SHELL_EXAMPLES[name]!;
      const e = example(name);
      const code = [...(run.after ?? []).map((before) => example(before).code), commandsOf(e)].join("\n");
      const { code: exit, output } = await runShell(scratch, runnable(code, ports), env);
      const where = `${name} (${e.file}:${e.line})`;
      expect(exit, `${where} exited ${exit}:\n${output}`).toBe(0);
      for (const shown of run.shows) expect(output, `${where} printed:\n${output}`).toContain(shown);
      if (run.printsExactly !== undefined) expect(output, where).toBe(run.printsExactly);
      if (run.printedLineShows !== undefined) {
        const line = output.trimEnd().split("\n").at(-1)!;
        const printed = await runShell(scratch, line, env);
        expect(printed.code, `${where}'s line exited ${printed.code}:\n${printed.output}`).toBe(0);
        for (const shown of run.printedLineShows) {
          expect(
            readFileSync(join(REPO_ROOT, e.file), "utf8"),
            `${e.file} does not show '${shown}'`,
          ).toContain(shown);
          expect(printed.output, `${where}'s line printed:\n${printed.output}`).toContain(shown);
        }
      }
    },
    60_000,
  );
});
