/**
 * `npm run bench:idle` (issue 25): connections that finish the TLS handshake and send nothing, as
 * an attacker hoarding the gateway's file descriptors would open them. N of them (IDLE_CONNECTIONS,
 * default 3000, from 127.0.0.x source addresses, at most 200 per address so that the per-address
 * cap alone does not turn them away) against the ingress gateway over TLS with its default
 * connection limits, for IDLE_SECONDS (default 45): each second, how many are still open, the
 * gateway's RSS and its open files (/proc). IDLE_BUILDS lists the builds to compare, each a
 * checkout with its dist/ built (default: this one), e.g. a worktree of the commit before the limits:
 * IDLE_BUILDS=.,/tmp/before npm run bench:idle. Results go to bench/RESULTS.md.
 */

import "reflect-metadata";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { type DevPki, generateDevPki } from "@psd2-gateway/dev-pki";
import { startChild, stop } from "./harness.js";
import { machineLine, replaceSection } from "./results-file.js";

const COUNT = Number(process.env.IDLE_CONNECTIONS ?? 3000);
const SECONDS = Number(process.env.IDLE_SECONDS ?? 45);
const BUILDS = (process.env.IDLE_BUILDS ?? ".").split(",").map((b) => resolve(b));
const PER_ADDRESS = 200;

interface Sample {
  readonly second: number;
  readonly open: number;
  readonly rssMb: number;
  readonly files: number;
}

function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Math.round(Number(kb ?? 0) / 1024);
}

const openFiles = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

function idleClient(port: number, localAddress: string, ca: string): Promise<TLSSocket | undefined> {
  return new Promise((resolve) => {
    const tcp = netConnect({ host: "127.0.0.1", port, localAddress });
    tcp.on("error", () => resolve(undefined));
    const socket = tlsConnect({ socket: tcp, ca, servername: "localhost" }, () => resolve(socket));
    socket.on("error", () => resolve(undefined));
    // Reading, so that the gateway's FIN is seen (a paused socket never emits 'end').
    socket.resume();
  });
}

async function measure(build: string, pki: DevPki["paths"], ca: string): Promise<Sample[]> {
  const backend = await startChild("servers/backend.ts", []);
  // Only keys every build's schema knows: each build runs with its own default limits.
  const config = {
    listen: { host: "127.0.0.1", port: 0, tls: { cert: pki.gatewayCert, key: pki.gatewayKey } },
    backend: { url: `http://127.0.0.1:${backend.port}` },
    trust: { caDir: pki.trustDir },
    register: { file: pki.register },
    log: { level: "silent" },
    admin: { enabled: false },
  };
  const gateway = await startChild("servers/trust-gateway.ts", [join(build, "dist")], 0, {
    BENCH_TRUST_CONFIG: JSON.stringify(config),
  });
  const pid = gateway.process.pid!;
  const before = { second: -1, open: 0, rssMb: rssMb(pid), files: openFiles(pid) };
  const sockets: TLSSocket[] = [];
  for (let i = 0; i < COUNT; i += 100) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(100, COUNT - i) }, (_, j) =>
        idleClient(gateway.port, `127.0.0.${2 + Math.floor((i + j) / PER_ADDRESS)}`, ca),
      ),
    );
    for (const s of batch) if (s) sockets.push(s);
  }
  // Counted at each sample: some close while the rest are still being opened.
  const stillOpen = () => sockets.filter((s) => !s.destroyed).length;
  const samples: Sample[] = [before];
  for (let second = 0; second <= SECONDS; second++) {
    const open = stillOpen();
    samples.push({ second, open, rssMb: rssMb(pid), files: openFiles(pid) });
    console.error(
      `${build} ${second}s: ${open} open, RSS ${samples.at(-1)!.rssMb} MB, ${samples.at(-1)!.files} files`,
    );
    await new Promise((r) => setTimeout(r, 1000));
  }
  for (const s of sockets) s.destroy();
  await stop(gateway);
  await stop(backend);
  return samples;
}

/** A build by its commit (and the folder, when it is not this checkout). */
function label(build: string): string {
  const commit = execFileSync("git", ["-C", build, "rev-parse", "--short", "HEAD"]).toString().trim();
  return build === resolve(".") ? `${commit} (this checkout)` : `${commit} (${build})`;
}

async function main() {
  const pkiDir = mkdtempSync(join(tmpdir(), "psd2-idle-"));
  const pki = await generateDevPki(pkiDir);
  const results = new Map<string, Sample[]>();
  for (const build of BUILDS) results.set(label(build), await measure(build, pki.paths, pki.root.pem));
  const at = (samples: Sample[], second: number) => samples.find((s) => s.second === second);
  const marks = [0, 5, 10, 14, 16, 20, 30, SECONDS].filter((s, i, a) => s <= SECONDS && a.indexOf(s) === i);
  const rows = [...results].flatMap(([build, samples]) => {
    const before = samples[0]!;
    const peak = samples.reduce((m, s) => (s.files > m.files ? s : m));
    const cleared = samples.find((s) => s.second >= 0 && s.open === 0);
    return [
      `| ${build} | ${marks.map((m) => at(samples, m)?.open ?? "–").join(" / ")} | ${cleared ? `${cleared.second} s` : `not within ${SECONDS} s`} | ${before.rssMb} → ${Math.max(...samples.map((s) => s.rssMb))} → ${samples.at(-1)!.rssMb} | ${before.files} → ${peak.files} → ${samples.at(-1)!.files} |`,
    ];
  });
  const report = `
${machineLine()}. ${COUNT} TLS connections that finish the handshake and send nothing (from 127.0.0.2 on, ${PER_ADDRESS} per address), against the ingress gateway over TLS with its default connection limits (a build's own defaults), sampled each second for ${SECONDS} s. Run with \`npm run bench:idle\` (\`IDLE_BUILDS\` to compare builds).

| build | still open at ${marks.map((m) => `${m} s`).join(" / ")} | all closed after | gateway RSS MB: before → peak → end | gateway open files: before → peak → end |
|---|---|---|---|---|
${rows.join("\n")}
`;
  replaceSection("Idle connections (bench/idle-connections.ts)", report);
  console.log(report);
  process.exit(0);
}

void main();
