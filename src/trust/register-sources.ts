/**
 * Where the register comes from: a JSON file (reloaded when it changes) or an HTTP(S) URL polled
 * with ETag / If-None-Match. A failed refresh keeps the last good copy and is counted.
 */

import { readFile, stat } from "node:fs/promises";
import { request } from "undici";
import { parseRegisterDocument, type TppRegister } from "../eidas/index.js";

export interface RegisterSource {
  /** Fetches once; resolves whether or not it succeeded (failures are recorded on the register). */
  refresh(): Promise<void>;
  start(): void;
  stop(): void;
  readonly description: string;
}

abstract class PollingSource implements RegisterSource {
  private timer: NodeJS.Timeout | undefined;
  abstract readonly description: string;

  constructor(
    protected readonly register: TppRegister,
    private readonly pollMs: number,
    protected readonly log: (message: string, error?: boolean) => void,
  ) {}

  abstract refresh(): Promise<void>;

  start(): void {
    this.timer ??= setInterval(() => void this.refresh(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  protected fail(message: string): void {
    this.register.recordFailure(message);
    this.log(
      `register refresh from ${this.description} failed: ${message}; keeping the last good copy`,
      true,
    );
  }
}

export class FileRegisterSource extends PollingSource {
  private signature: string | undefined;
  readonly description: string;

  constructor(
    private readonly file: string,
    register: TppRegister,
    pollMs: number,
    log: (message: string, error?: boolean) => void = () => {},
  ) {
    super(register, pollMs, log);
    this.description = file;
  }

  async refresh(): Promise<void> {
    try {
      const info = await stat(this.file);
      const signature = `${info.mtimeMs}:${info.size}`;
      if (signature === this.signature) {
        this.register.confirm();
        return;
      }
      const entries = parseRegisterDocument(await readFile(this.file, "utf8"));
      this.register.replace(entries, this.file);
      this.signature = signature;
      this.log(`register loaded from ${this.file}: ${entries.length} TPPs`);
    } catch (error) {
      this.fail((error as Error).message);
    }
  }
}

export class HttpRegisterSource extends PollingSource {
  private etag: string | undefined;
  readonly description: string;

  constructor(
    private readonly url: string,
    register: TppRegister,
    pollMs: number,
    log: (message: string, error?: boolean) => void = () => {},
    private readonly timeoutMs = 10_000,
  ) {
    super(register, pollMs, log);
    this.description = url;
  }

  async refresh(): Promise<void> {
    try {
      const headers: Record<string, string> = { accept: "application/json" };
      if (this.etag) headers["if-none-match"] = this.etag;
      const response = await request(this.url, {
        headers,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      if (response.statusCode === 304) {
        await response.body.dump();
        this.register.confirm();
        return;
      }
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`HTTP ${response.statusCode}`);
      const entries = parseRegisterDocument(text);
      this.register.replace(entries, this.url);
      const etag = response.headers.etag;
      this.etag = typeof etag === "string" ? etag : undefined;
      this.log(`register loaded from ${this.url}: ${entries.length} TPPs`);
    } catch (error) {
      this.fail((error as Error).message);
    }
  }
}
