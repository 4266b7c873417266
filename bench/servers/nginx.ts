/**
 * nginx as the TLS-terminating pass-through a bank would put in front of its API (bench/tls.ts):
 * our own instance with a generated config in a temp dir (never the system's service), one worker,
 * the dev gateway certificate and key, TLS 1.2 and 1.3 like the gateway's listener, a keep-alive
 * upstream to the bench backend. Its CPU is read from /proc (it is no bench child to ask).
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CAN_PIN } from "../taskset.js";

export interface NginxTls {
  readonly certFile: string;
  readonly keyFile: string;
  /**
   * Ask for the client's certificate and check its chain against this CA file (`ssl_verify_client
   * optional`), handing it to the backend URL-encoded as the gateway's clientCertificateHeader expects.
   */
  readonly clientCaFile?: string;
}

export interface NginxOptions {
  readonly backendPort: number;
  /** Without it, plain HTTP: what TLS costs nginx shows apart. */
  readonly tls?: NginxTls;
  /** Cores to run on (taskset -c); every process nginx forks inherits them. */
  readonly cores?: number | string;
}

export interface Nginx {
  readonly port: number;
  /** CPU time of the master and its worker so far (user + system), µs. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function config(dir: string, port: number, o: NginxOptions): string {
  const { tls } = o;
  const tlsLines = tls
    ? `ssl_certificate ${tls.certFile};
    ssl_certificate_key ${tls.keyFile};
    ssl_protocols TLSv1.2 TLSv1.3;
    # Resumption as Node's server offers it by default: TLS 1.3 tickets (and a cache for TLS 1.2 ids).
    ssl_session_tickets on;
    ssl_session_cache shared:SSL:10m;`
    : "";
  const mtls = tls?.clientCaFile
    ? `ssl_client_certificate ${tls.clientCaFile};
    ssl_verify_client optional;
    ssl_verify_depth 2;`
    : "";
  // In the location: a proxy_set_header there drops every one inherited from the server block.
  const forwardCertificate = tls?.clientCaFile
    ? "proxy_set_header X-SSL-Client-Cert $ssl_client_escaped_cert;"
    : "";
  return `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  # A signed TPP request carries about 2.6 KB of headers: read them in one buffer, as Node does.
  client_header_buffer_size 8k;
  keepalive_requests 1000000;
  keepalive_timeout 65s;
  upstream backend {
    server 127.0.0.1:${o.backendPort};
    keepalive 128;
  }
  server {
    listen 127.0.0.1:${port}${tls ? " ssl" : ""};
    ${tlsLines}
    ${mtls}
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      ${forwardCertificate}
    }
  }
}
`;
}

/** µs of CPU of the given processes so far, from /proc/<pid>/stat (utime + stime, clock ticks). */
function procCpuUs(pids: readonly number[], tickUs: number): number {
  let ticks = 0;
  for (const pid of pids) {
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  }
  return ticks * tickUs;
}

function waitForPort(port: number, child: ChildProcess, dir: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) {
        reject(new Error(`nginx exited: ${readFileSync(join(dir, "error.log"), "utf8")}`));
        return;
      }
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve();
      });
      socket.once("error", () => {
        if (Date.now() > deadline) reject(new Error("nginx did not listen"));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/** The master's worker, once it has forked it. */
async function workersOf(master: number): Promise<number[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      return execFileSync("pgrep", ["-P", String(master)])
        .toString()
        .trim()
        .split("\n")
        .map(Number);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50)); // pgrep fails while there is none
    }
  }
  throw new Error("nginx started no worker");
}

export async function startNginx(options: NginxOptions): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "psd2-bench-nginx-"));
  // Run as root, nginx's worker drops to nobody, which must reach the temp paths.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const file = join(dir, "nginx.conf");
  writeFileSync(file, config(dir, port, options));
  const args = ["-p", dir, "-c", file, "-e", join(dir, "error.log"), "-g", "daemon off;"];
  const child =
    CAN_PIN && options.cores !== undefined
      ? spawn("taskset", ["-c", String(options.cores), "nginx", ...args], { stdio: "ignore" })
      : spawn("nginx", args, { stdio: "ignore" });
  await waitForPort(port, child, dir);
  // Daemon off, and taskset execs nginx: the child is the master.
  const master = child.pid!;
  const workers = await workersOf(master);
  const tickUs = 1e6 / Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim());
  const pids = [master, ...workers];
  return {
    port,
    cpu: async () => procCpuUs(pids, tickUs),
    async stop() {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      // SIGQUIT: nginx's graceful shutdown (the worker finishes, the master removes its pid file).
      process.kill(master, "SIGQUIT");
      const timer = setTimeout(() => {
        for (const pid of pids) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }, 5000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
