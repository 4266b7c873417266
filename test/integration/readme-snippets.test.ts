/**
 * The documentation's code as a user gets it: `npm pack` (which builds dist/), the tarball installed
 * into an empty project, every ```ts/```js block of README.md and docs/*.md written there and run on
 * this Node (26 strips TypeScript types itself, so a .ts snippet runs as the docs say: `node file.ts`),
 * its output held against the `// prints:` lines under it, and the snippets type-checked against the
 * package's own declarations. Each block carries `<!-- snippet: name -->` (run here) or
 * `<!-- snippet-exempt: why -->` on the line before it; a failure names the file and line.
 */

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash, verify as cryptoVerify, X509Certificate } from "node:crypto";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, relative } from "node:path";
import { promisify } from "node:util";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeLoopbackPort, REPO_ROOT } from "../helpers/gateway-process.js";

const run = promisify(execFile);

interface Snippet {
  /** The marker's name, or undefined for an exempted block. */
  readonly name: string | undefined;
  readonly exemptBecause: string | undefined;
  readonly language: "ts" | "js";
  readonly code: string;
  /** The Markdown file, relative to the repository. */
  readonly file: string;
  /** 1-based line of the opening fence in that file. */
  readonly line: number;
}

const FENCE = /^(\s*)```(ts|typescript|js|javascript|mjs)\s*$/;
const MARKER = /^\s*<!--\s*snippet:\s*([a-z0-9-]+)\s*-->\s*$/;
const EXEMPT = /^\s*<!--\s*snippet-exempt:\s*(.+?)\s*-->\s*$/;

/** Every TypeScript or JavaScript block of a Markdown text, with the marker on the line before it. */
function readmeSnippets(markdown: string, file: string): Snippet[] {
  const lines = markdown.split("\n");
  const found: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const end = lines.findIndex((l, j) => j > i && l.trim() === "```");
    if (end < 0) throw new Error(`${file}:${i + 1}: code block never closed`);
    const before = lines[i - 1] ?? "";
    found.push({
      name: MARKER.exec(before)?.[1],
      exemptBecause: EXEMPT.exec(before)?.[1],
      language: open[2]!.startsWith("t") ? "ts" : "js",
      code: `${lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join("\n")}\n`,
      file,
      line: i + 1,
    });
    i = end;
  }
  return found;
}

const HTTP_DATE = /\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\b/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

/** What differs from run to run in the docs' example output: the clock and random request ids. */
function normalised(line: string): string {
  return line.replace(HTTP_DATE, "<http-date>").replace(UUID, "<uuid>");
}

/** The `// prints…:` comment lines at a snippet's end, the output the docs promise. */
function promisedOutput(code: string): string[] {
  const lines = code.trimEnd().split("\n");
  const start = lines.findIndex((l) => /^\/\/ prints\b.*:$/.test(l));
  if (start < 0) return [];
  return lines.slice(start + 1).map((l) => {
    if (!l.startsWith("// ")) throw new Error(`'${l}' after '// prints…:' is not a '// ' comment line`);
    return l.slice(3);
  });
}

/** Each printed line matches its promised line, `…` standing for any text. */
function expectPrinted(snippet: Snippet, stdout: string): void {
  const where = `${snippet.name} (${snippet.file}:${snippet.line})`;
  const promised = promisedOutput(snippet.code);
  expect(promised.length, `${where} has no '// prints:' lines`).toBeGreaterThan(0);
  const printed = stdout.trimEnd().split("\n");
  expect(printed, `${where} printed:\n${stdout}`).toHaveLength(promised.length);
  promised.forEach((line, i) => {
    const pattern = normalised(line)
      .split("…")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*");
    expect(normalised(printed[i]!), `${where}, line ${i + 1} of its output`).toMatch(
      new RegExp(`^${pattern}$`),
    );
  });
}

/** The Markdown files whose blocks are read: README.md and every file of docs/. */
const MARKDOWN_FILES = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];
const SNIPPETS = MARKDOWN_FILES.flatMap((file) =>
  readmeSnippets(readFileSync(join(REPO_ROOT, file), "utf8"), file),
);
const RUNNABLE = new Map(SNIPPETS.flatMap((s) => (s.name ? [[s.name, s] as const] : [])));

function snippet(name: string): Snippet {
  const found = RUNNABLE.get(name);
  if (!found) throw new Error(`no block of ${MARKDOWN_FILES.join(", ")} is marked <!-- snippet: ${name} -->`);
  return found;
}

// What the sign-request snippet signs; the verify-request run sends it to the server snippet.
const SIGNED_REQUEST = {
  method: "POST",
  target: "/v1/payments/norwegian-domestic-credit-transfers",
  headers: { "PSU-ID": "9f1c7c3e-5b8e-4d7e-9a53-3f8c0b1d2e4a", "TPP-Redirect-URI": "https://tpp.example/cb" },
  body: JSON.stringify({ instructedAmount: { amount: "10.00", currency: "NOK" } }),
} as const;

/** Marked snippets and what this test does with each; a marker without an entry here fails. */
const EXPECTED_SNIPPETS = ["sign-request", "verify-request", "sign-rfc9421-request"];

describe("the documentation's code blocks", () => {
  it("are each marked runnable or exempted with a reason", () => {
    expect(SNIPPETS.length).toBeGreaterThan(0);
    for (const s of SNIPPETS) {
      expect(s.name ?? s.exemptBecause, `${s.file}:${s.line} has neither marker`).toBeDefined();
    }
    const names = SNIPPETS.flatMap((s) => (s.name ? [s.name] : []));
    const places = SNIPPETS.flatMap((s) => (s.name ? [`${s.name} at ${s.file}:${s.line}`] : []));
    expect(new Set(names).size, `a snippet name is used twice: ${places.join(", ")}`).toBe(names.length);
    expect(names.toSorted()).toEqual(EXPECTED_SNIPPETS.toSorted());
  });

  it("find unmarked and exempted blocks, indented ones too", () => {
    const found = readmeSnippets(
      [
        "```ts",
        "a()",
        "```",
        "<!-- snippet-exempt: a fragment -->",
        "   ```js",
        "   b()",
        "   ```",
        "<!-- snippet: c -->",
        "```typescript",
        "c()",
        "```",
        "```sh",
        "ls",
        "```",
      ].join("\n"),
      "docs/x.md",
    );
    expect(found.map((s) => [s.name, s.exemptBecause, s.language, s.code, `${s.file}:${s.line}`])).toEqual([
      [undefined, undefined, "ts", "a()\n", "docs/x.md:1"],
      [undefined, "a fragment", "js", "b()\n", "docs/x.md:5"],
      ["c", undefined, "ts", "c()\n", "docs/x.md:9"],
    ]);
    expect(() => readmeSnippets("```ts\na()\n", "docs/y.md")).toThrow("docs/y.md:1: code block never closed");
  });

  it("hold printed output to the promised lines, … for any text", () => {
    const s: Snippet = {
      name: "t",
      exemptBecause: undefined,
      language: "ts",
      code: "x();\n// prints:\n// Date: Thu, 26 Nov 2026 14:59:26 GMT\n// id … end\n",
      file: "docs/x.md",
      line: 1,
    };
    expectPrinted(s, "Date: Mon, 01 Dec 2031 00:00:00 GMT\nid anything at all end\n");
    expect(() => expectPrinted(s, "Date: Mon, 01 Dec 2031 00:00:00 GMT\nid anything\n")).toThrow();
    expect(() => expectPrinted(s, "Date: tomorrow\nid x end\n")).toThrow();
    expect(() => expectPrinted(s, "Date: Mon, 01 Dec 2031 00:00:00 GMT\n")).toThrow();
  });
});

/** The environment for npm and the package's command line: this Node first, no npm_ variables of the outer run. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // An outer `npm test` sets npm_config_local_prefix and the like, which would point npm back at the checkout.
    if (/^npm_/i.test(key) && !/^npm_config_(cache|registry|userconfig)$/i.test(key)) continue;
    env[key] = value;
  }
  env.PATH = `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}`;
  return env;
}

/** `Name: value` lines, as the sign-request snippet prints its headers. */
function headerLines(stdout: string): Record<string, string> {
  return Object.fromEntries(
    stdout
      .trimEnd()
      .split("\n")
      .map((line) => [line.slice(0, line.indexOf(": ")), line.slice(line.indexOf(": ") + 2)]),
  );
}

/** Every file below `dir`, relative to it. */
function filesBelow(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

describe("the documentation's code run against the packed package", () => {
  let work: string;
  let project: string;
  const env = childEnv();

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "psd2-readme-"));
    project = join(work, "project");
    // prepack builds dist/ (afresh) when the sources changed since the last build, so the tarball
    // holds what the sources say today and an up-to-date dist/ is left as it is for npm start.
    await run("npm", ["pack", "--pack-destination", work], { cwd: REPO_ROOT, env });
    const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"));
    if (!tarball) throw new Error(`npm pack wrote no tarball into ${work}`);
    // The dev PKI is a package of its own (packages/dev-pki, built by the pack above), installed
    // next to the gateway for `psd2-gateway certs`, as its message when missing says.
    const pkiWork = join(work, "dev-pki");
    mkdirSync(pkiWork);
    await run("npm", ["pack", "--workspace", "@psd2-gateway/dev-pki", "--pack-destination", pkiWork], {
      cwd: REPO_ROOT,
      env,
    });
    const pkiTarball = readdirSync(pkiWork).find((f) => f.endsWith(".tgz"));
    if (!pkiTarball) throw new Error(`npm pack wrote no tarball of the dev PKI into ${pkiWork}`);

    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      `${JSON.stringify({ name: "readme-snippets", private: true, type: "module" }, null, 2)}\n`,
    );
    // The production dependencies come from the cache npm ci filled; the optional Node binary is
    // left out (200 MB, and the snippets run on this Node).
    await run(
      "npm",
      [
        "install",
        join(work, tarball),
        join(pkiWork, pkiTarball),
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        "--omit=optional",
      ],
      { cwd: project, env },
    );
    // The installed command line makes the dev PKI; its demo TPP's QSealC is the snippets' qseal.pem.
    await run(join(project, "node_modules", ".bin", "psd2-gateway"), ["certs", "--out", "certs"], {
      cwd: project,
      env,
    });
    copyFileSync(join(project, "certs", "tpp", "tpp-a-qseal.pem"), join(project, "qseal.pem"));
    copyFileSync(join(project, "certs", "tpp", "tpp-a-qseal.key.pem"), join(project, "qseal.key.pem"));
    for (const s of RUNNABLE.values()) {
      writeFileSync(join(project, `${s.name}.${s.language === "ts" ? "ts" : "mjs"}`), s.code);
    }
  }, 300_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("ships the built library, its declarations, the CLI's configs and the docs README links, not tests, sources or keys", () => {
    const files = filesBelow(join(project, "node_modules", "psd2-gateway"));
    expect(files).toEqual(
      expect.arrayContaining([
        "package.json",
        "README.md",
        "dist/main.js",
        "dist/signature/index.js",
        "dist/signature/index.d.ts",
        "config/default.yaml",
      ]),
    );
    // README's documentation map works in an installed copy: every docs/ page it links is there.
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const linked = [...new Set([...readme.matchAll(/\]\((docs\/[^)#\s]+\.md)/g)].map((m) => m[1]!))];
    expect(linked.length).toBeGreaterThan(0);
    expect(files).toEqual(expect.arrayContaining(linked));
    const unwanted = files.filter(
      (f) =>
        /^(src|test|bench|deploy|certs\/dev)\/|\.key\.pem$|^tsconfig|^\.ci\//.test(f) ||
        (f.startsWith("docs/") && !f.endsWith(".md")),
    );
    expect(unwanted).toEqual([]);
  });

  it("type-checks the snippets against the package's declarations", async () => {
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          lib: ["ES2023"],
          types: ["node"],
          // @types/node is the checkout's: the project under test installs only the package.
          typeRoots: [join(REPO_ROOT, "node_modules", "@types")],
          strict: true,
          noEmit: true,
          // What Node's type stripping needs: type-only imports marked, no enums or namespaces.
          verbatimModuleSyntax: true,
          erasableSyntaxOnly: true,
          // The package's .d.ts files are checked too, as a consumer without skipLibCheck gets them.
          skipLibCheck: false,
        },
        include: ["*.ts"],
      }),
    );
    const tsc = join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    const result = await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: project, env }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(result.stdout).toBe("");
  });

  it("sign-request: prints the headers it promises, and they verify over the request", async () => {
    const s = snippet("sign-request");
    const { stdout } = await run(process.execPath, ["sign-request.ts"], { cwd: project, env });
    expectPrinted(s, stdout);

    const printed = headerLines(stdout);
    const certificate = new X509Certificate(readFileSync(join(project, "qseal.pem")));
    expect(printed["TPP-Signature-Certificate"]).toBe(certificate.raw.toString("base64"));
    // The signature checked by hand with node:crypto, not with the library that made it.
    const params = Object.fromEntries(
      [...printed.Signature!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    expect(params.keyId).toMatch(new RegExp(`^SN=0*${certificate.serialNumber.replace(/^0+/, "")},CA=`, "i"));
    const values: Record<string, string> = {
      "(request-target)": `${SIGNED_REQUEST.method.toLowerCase()} ${SIGNED_REQUEST.target}`,
      date: printed.Date!,
      digest: printed.Digest!,
      "x-request-id": printed["X-Request-ID"]!,
      "psu-id": SIGNED_REQUEST.headers["PSU-ID"],
      "tpp-redirect-uri": SIGNED_REQUEST.headers["TPP-Redirect-URI"],
    };
    const signingString = params
      .headers!.split(" ")
      .map((name) => `${name}: ${values[name]}`)
      .join("\n");
    const signature = Buffer.from(params.signature!, "base64");
    expect(cryptoVerify("sha256", Buffer.from(signingString), certificate.publicKey, signature)).toBe(true);
    expect(printed.Digest).toBe(
      `SHA-256=${createHash("sha256").update(SIGNED_REQUEST.body).digest("base64")}`,
    );
  });

  it("sign-rfc9421-request: prints the headers it promises, and an independent RFC 9421 verifier accepts them", async () => {
    const s = snippet("sign-rfc9421-request");
    const { stdout } = await run(process.execPath, ["sign-rfc9421-request.ts"], { cwd: project, env });
    expectPrinted(s, stdout);
    const printed = Object.fromEntries(
      stdout
        .trimEnd()
        .split("\n")
        .map((line) => [line.slice(0, line.indexOf(": ")), line.slice(line.indexOf(": ") + 2)]),
    );
    const certificate = new X509Certificate(readFileSync(join(project, "qseal.pem")));
    expect(printed["tpp-signature-certificate"]).toBe(certificate.raw.toString("base64"));
    const body = JSON.stringify({ instructedAmount: { amount: "10.00", currency: "NOK" } });
    expect(printed["content-digest"]).toBe(`sha-256=:${createHash("sha256").update(body).digest("base64")}:`);
    // Checked with dhensby's http-message-signatures, not with the library that signed.
    const { createVerifier, httpbis } = await import("http-message-signatures");
    const verified = await httpbis.verifyMessage(
      {
        keyLookup: async () => ({
          id: "tpp",
          algs: ["rsa-pss-sha512"],
          verify: createVerifier(certificate.publicKey, "rsa-pss-sha512"),
        }),
        tolerance: 60,
      },
      {
        method: "POST",
        url: "https://localhost:8443/v1/payments/norwegian-domestic-credit-transfers",
        headers: printed,
      },
    );
    expect(verified).toBe(true);
  });

  it("verify-request: accepts the signed request, refuses it altered, prints what it promises", async () => {
    const s = snippet("verify-request");
    const signed = await run(process.execPath, ["sign-request.ts"], { cwd: project, env });
    const signedHeaders = headerLines(signed.stdout);
    const port = await freeLoopbackPort();
    const server: ChildProcess = spawn(process.execPath, ["verify-request.ts"], {
      cwd: project,
      env: { ...env, PORT: String(port) },
    });
    let stdout = "";
    let stderr = "";
    server.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    server.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => server.once("exit", resolve));
    try {
      await expect
        .poll(() => stdout + stderr, { timeout: 20_000, interval: 50 })
        .toContain("verifying requests on");
      const send = async (change: { body?: string; psuId?: string }) => {
        const response = await request(`http://127.0.0.1:${port}${SIGNED_REQUEST.target}`, {
          method: SIGNED_REQUEST.method,
          headers: {
            ...SIGNED_REQUEST.headers,
            ...signedHeaders,
            "Content-Type": "application/json",
            ...(change.psuId ? { "PSU-ID": change.psuId } : {}),
          },
          body: change.body ?? SIGNED_REQUEST.body,
        });
        return { status: response.statusCode, body: (await response.body.json()) as unknown };
      };
      // The order the snippet's output lists them in.
      expect(await send({})).toEqual({ status: 200, body: { verified: true } });
      const altered = await send({ body: SIGNED_REQUEST.body.replace("10.00", "99.00") });
      expect(altered.status).toBe(400);
      expect(altered.body).toMatchObject({ tppMessages: [{ category: "ERROR", code: "SIGNATURE_INVALID" }] });
      const swapped = await send({ psuId: "00000000-0000-4000-8000-000000000000" });
      expect(swapped.status).toBe(400);
      expect(swapped.body).toMatchObject({ tppMessages: [{ code: "SIGNATURE_INVALID" }] });
    } finally {
      server.kill("SIGTERM");
      await exited;
    }
    expect(stderr).toBe("");
    // The snippet shows the default port.
    expectPrinted(s, stdout.replace(`127.0.0.1:${port}`, "127.0.0.1:8080"));
  });
});
