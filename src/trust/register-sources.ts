/**
 * Where a register layer comes from: a file (reloaded when it changes), an HTTP(S) URL polled
 * with If-None-Match / If-Modified-Since, or the EBA's metadata URL, which names the current ZIP
 * with its size and SHA-256 (MetadataRegisterSource). A file or URL holds our JSON, the EBA's JSON
 * or the EBA's ZIP (`format`, or told apart by content); decoding runs off the event loop
 * (register-loading.ts).
 *
 * Polling is jittered (±10 %) so that a fleet of gateways does not hit the publisher in step;
 * after a failure the next try comes sooner and backs off exponentially, up to the poll interval.
 * A failed refresh keeps the last good copy and is counted on the layer. The layers' sources
 * together are one trust source (RegisterTrustSource): loaded at once, reported layer by layer.
 */

import { stat } from "node:fs/promises";
import type { RegisterSink, TppRegister } from "../eidas/index.js";
import { DocumentRefused, type OnRefused, prefixed, readFileBounded, refusalOf } from "./bounds.js";
import {
  type EbaFileMetadata,
  MAX_METADATA_BYTES,
  parseEbaFileMetadata,
} from "./formats/eba-file-metadata.js";
import { type DocumentFetcher, fetchDocument, type Validators, withoutCredentials } from "./http-fetch.js";
import { type LoadRegisterOptions, loadRegister, type RegisterFormat } from "./register-loading.js";
import type { TrustSource } from "./source.js";
import type { TrustSourceStatus } from "./source-status.js";

export interface RegisterSource {
  /** Fetches once; resolves whether or not it succeeded (failures are recorded on the register). */
  refresh(): Promise<void>;
  start(): void;
  stop(): void;
  readonly description: string;
  /** The layer it fills. */
  readonly name?: string | undefined;
  /** The copy held, where the description alone does not say it (the file a metadata URL named). */
  readonly held?: string | undefined;
}

export type RegisterLog = (message: string, error?: boolean) => void;

export interface RegisterSourceOptions {
  /** What the bytes hold; `auto` (the default) tells a ZIP by its magic and our JSON from the EBA's by shape. */
  readonly format?: RegisterFormat;
  /** Stamped on entries as `source` and used in logs; a layer's name by default. */
  readonly name?: string;
  /** Larger files or bodies are refused, while they are read (default 200 MB). */
  readonly maxBytes?: number;
  /** Fraction of the poll interval the delay varies by, either way (default 0.1). */
  readonly jitter?: number;
  /** The first retry after a failure; doubles per further failure, up to the poll interval (default 10 s). */
  readonly retryBaseMs?: number;
  /** Uniform in [0, 1); for tests. */
  readonly random?: () => number;
  /** Slice size, inline threshold and worker timeout of the loader; a ZIP's bounds. */
  readonly load?: Pick<
    LoadRegisterOptions,
    | "sliceSize"
    | "inlineBelowBytes"
    | "timeoutMs"
    | "maxUncompressedBytes"
    | "maxZipEntries"
    | "maxCompressionRatio"
  >;
  /** A copy refused by one of its bounds (bytes, a ZIP's): counted by app/ (the log line is the source's). */
  readonly onRefused?: OnRefused;
}

export interface HttpRegisterSourceOptions extends RegisterSourceOptions {
  /** Waiting for headers, and for each body chunk (default 30 s). */
  readonly timeoutMs?: number;
  /** The whole download (default 10 min: a 50 MB file on a slow link). */
  readonly totalTimeoutMs?: number;
  /** Where the register is fetched from (default fetchDocument; a cluster worker asks the primary). */
  readonly fetch?: DocumentFetcher;
}

export const DEFAULT_MAX_REGISTER_BYTES = 200 * 1024 * 1024;

/**
 * The wait before the next refresh: the poll interval after a success; after `failures`
 * consecutive failures, retryBaseMs·2^(failures−1), capped at the poll interval; then ±jitter.
 */
export function pollDelay(
  pollMs: number,
  failures: number,
  options: { jitter?: number; retryBaseMs?: number; random?: () => number } = {},
): number {
  const retryBase = Math.min(pollMs, options.retryBaseMs ?? 10_000);
  const base = failures <= 0 ? pollMs : Math.min(pollMs, retryBase * 2 ** Math.min(failures - 1, 30));
  const jitter = options.jitter ?? 0.1;
  const random = options.random ?? Math.random;
  return Math.max(1, Math.round(base * (1 + jitter * (2 * random() - 1))));
}

type Fetched =
  | { readonly unchanged: true }
  | {
      readonly unchanged: false;
      readonly bytes: Uint8Array;
      readonly commit: () => void;
      readonly info?: { etag?: string; lastModified?: string };
      /** The SHA-256 (hex) the publisher declared for the bytes; the loader refuses others. */
      readonly sha256?: string;
      /** What was fetched, for the log line, when the description does not say it. */
      readonly copy?: string;
    };

abstract class PollingSource implements RegisterSource {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private inFlight: Promise<void> | undefined;
  private consecutiveFailures = 0;
  abstract readonly description: string;
  readonly name: string | undefined;

  constructor(
    protected readonly sink: RegisterSink,
    protected readonly pollMs: number,
    protected readonly log: RegisterLog,
    protected readonly options: RegisterSourceOptions,
  ) {
    this.name = options.name ?? sink.name;
  }

  /** The bytes of a new copy, or `unchanged` (304, same file). Throws on failure. */
  protected abstract fetch(): Promise<Fetched>;

  refresh(): Promise<void> {
    // One refresh at a time: a timer firing during a slow load joins it instead of starting another.
    this.inFlight ??= this.refreshOnce().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async refreshOnce(): Promise<void> {
    try {
      const fetched = await this.fetch();
      if (fetched.unchanged) {
        this.sink.confirm();
      } else {
        const loaded = await loadRegister(fetched.bytes, {
          ...this.options.load,
          ...(this.options.format ? { format: this.options.format } : {}),
          ...(this.name !== undefined ? { source: this.name } : {}),
          ...(fetched.sha256 !== undefined ? { sha256: fetched.sha256 } : {}),
        });
        this.sink.replace(loaded.entries, this.description, { ...fetched.info, skipped: loaded.skipped });
        fetched.commit();
        this.log(
          `register${this.name ? ` '${this.name}'` : ""} loaded from ${this.description}${fetched.copy ? ` (${fetched.copy})` : ""}: ${loaded.entries.size} TPPs${loaded.skipped ? `, ${loaded.skipped} entities skipped ${JSON.stringify(loaded.skippedByReason)}` : ""}`,
        );
      }
      this.consecutiveFailures = 0;
    } catch (error) {
      this.consecutiveFailures++;
      const message = (error as Error).message;
      const refused = refusalOf(error);
      if (refused) this.options.onRefused?.(refused);
      this.sink.recordFailure(message);
      this.log(
        `register refresh from ${this.description} failed: ${message}; keeping the last good copy`,
        true,
      );
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (!this.running) return;
    const delay = pollDelay(this.pollMs, this.consecutiveFailures, this.options);
    this.timer = setTimeout(() => {
      void this.refresh().then(() => this.schedule());
    }, delay);
    this.timer.unref();
  }
}

export class FileRegisterSource extends PollingSource {
  private signature: string | undefined;
  readonly description: string;

  constructor(
    private readonly file: string,
    sink: RegisterSink,
    pollMs: number,
    log: RegisterLog = () => {},
    options: RegisterSourceOptions = {},
  ) {
    super(sink, pollMs, log, options);
    this.description = file;
    sink.describe?.(file);
  }

  protected async fetch(): Promise<Fetched> {
    const info = await stat(this.file);
    const signature = `${info.mtimeMs}:${info.size}`;
    if (signature === this.signature) return { unchanged: true };
    const bytes = await readFileBounded(this.file, this.options.maxBytes ?? DEFAULT_MAX_REGISTER_BYTES);
    return { unchanged: false, bytes, commit: () => (this.signature = signature) };
  }
}

export class HttpRegisterSource extends PollingSource {
  private etag: string | undefined;
  private lastModified: string | undefined;
  readonly description: string;

  /** `options` may be a number: the timeout in ms, as before. */
  constructor(
    private readonly url: string,
    sink: RegisterSink,
    pollMs: number,
    log: RegisterLog = () => {},
    options: HttpRegisterSourceOptions | number = {},
  ) {
    const resolved = typeof options === "number" ? { timeoutMs: options } : options;
    super(sink, pollMs, log, resolved);
    this.description = withoutCredentials(url);
    sink.describe?.(this.description);
  }

  protected async fetch(): Promise<Fetched> {
    const options = this.options as HttpRegisterSourceOptions;
    const timeoutMs = options.timeoutMs ?? 30_000;
    const max = options.maxBytes ?? DEFAULT_MAX_REGISTER_BYTES;
    const result = await (options.fetch ?? fetchDocument)(this.url, {
      timeoutMs,
      totalTimeoutMs: options.totalTimeoutMs ?? 600_000,
      maxBytes: max,
      accept: "application/zip, application/json;q=0.9, */*;q=0.5",
      // Another worker's copy fetched within most of a poll interval is this poll's copy too.
      shareForMs: 0.9 * this.pollMs,
      validators: {
        ...(this.etag ? { etag: this.etag } : {}),
        ...(this.lastModified ? { lastModified: this.lastModified } : {}),
      },
    });
    if (result.status === "not-modified") return { unchanged: true };
    // The body has a buffer of its own: the loader moves it to its worker instead of copying it.
    const bytes = new Uint8Array(result.body.buffer, result.body.byteOffset, result.body.byteLength);
    const { etag, lastModified } = result;
    return {
      unchanged: false,
      bytes,
      info: { ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) },
      // Validators are kept only once the copy is in: a body that failed to load is fetched whole next time.
      commit: () => {
        this.etag = etag;
        this.lastModified = lastModified;
      },
    };
  }
}

export interface MetadataRegisterSourceOptions extends HttpRegisterSourceOptions {
  /** A larger metadata answer is refused (default 64 KiB; the EBA's is a few hundred bytes). */
  readonly maxMetadataBytes?: number;
}

/**
 * The EBA register by its metadata URL. Each poll asks for the metadata (conditionally); the ZIP
 * it names is downloaded only when it is another file than the one held (another URL, size or
 * SHA-256) or the last load failed. The ZIP must have the declared size and SHA-256 (and its
 * JSON the SHA-256 of a sidecar beside it: register-worker.ts) or it is refused and the copy held
 * stays. The metric label is the metadata URL (configured, bounded); the file held is `held`.
 */
export class MetadataRegisterSource extends PollingSource {
  readonly description: string;
  /** The last metadata read, answered for by a 304 to the next request. */
  private metadata: EbaFileMetadata | undefined;
  private metadataValidators: Validators = {};
  private loaded: EbaFileMetadata | undefined;

  constructor(
    private readonly url: string,
    sink: RegisterSink,
    pollMs: number,
    log: RegisterLog = () => {},
    options: MetadataRegisterSourceOptions = {},
  ) {
    // The metadata names the EBA's ZIP and nothing else.
    super(sink, pollMs, log, { ...options, format: "eba-zip" });
    this.description = withoutCredentials(url);
    sink.describe?.(this.description);
  }

  get held(): string | undefined {
    return this.loaded && describeFile(this.loaded);
  }

  protected async fetch(): Promise<Fetched> {
    const options = this.options as MetadataRegisterSourceOptions;
    const timeoutMs = options.timeoutMs ?? 30_000;
    const metadata = await this.currentMetadata(options, timeoutMs);
    const loaded = this.loaded;
    if (
      loaded &&
      loaded.fileUrl === metadata.fileUrl &&
      loaded.sha256 === metadata.sha256 &&
      loaded.size === metadata.size
    )
      return { unchanged: true };
    const max = options.maxBytes ?? DEFAULT_MAX_REGISTER_BYTES;
    if (metadata.size > max)
      throw new DocumentRefused(
        "size",
        `the metadata declares a file of ${metadata.size} bytes, more than the ${max} allowed`,
      );
    const fileUrl = new URL(metadata.fileUrl);
    if (new URL(this.url).protocol === "https:" && fileUrl.protocol !== "https:")
      throw new Error(`the metadata (read over https) names a file over ${fileUrl.protocol}; refused`);
    const file = describeFile(metadata);
    let result: Awaited<ReturnType<typeof fetchDocument>>;
    try {
      result = await (options.fetch ?? fetchDocument)(metadata.fileUrl, {
        timeoutMs,
        totalTimeoutMs: options.totalTimeoutMs ?? 600_000,
        maxBytes: max,
        accept: "application/zip, */*;q=0.5",
        // Another worker's copy of the same file is this one (the file a metadata answer names does not change).
        shareForMs: 0.9 * this.pollMs,
      });
    } catch (error) {
      throw prefixed(`file ${file}: `, error);
    }
    if (result.status === "not-modified") throw new Error(`file ${file}: HTTP 304 to a plain GET`);
    if (result.body.byteLength !== metadata.size)
      throw new Error(
        `size check failed: file ${file} is ${result.body.byteLength} bytes, the metadata declares ${metadata.size}`,
      );
    return {
      unchanged: false,
      bytes: new Uint8Array(result.body.buffer, result.body.byteOffset, result.body.byteLength),
      sha256: metadata.sha256,
      copy: file,
      commit: () => {
        this.loaded = metadata;
      },
    };
  }

  /** The metadata as the publisher answers it now; a 304 stands for the last one read. */
  private async currentMetadata(
    options: MetadataRegisterSourceOptions,
    timeoutMs: number,
  ): Promise<EbaFileMetadata> {
    let result: Awaited<ReturnType<typeof fetchDocument>>;
    try {
      result = await (options.fetch ?? fetchDocument)(this.url, {
        timeoutMs,
        maxBytes: options.maxMetadataBytes ?? MAX_METADATA_BYTES,
        accept: "application/json",
        shareForMs: 0.9 * this.pollMs,
        validators: this.metadataValidators,
      });
    } catch (error) {
      throw prefixed(`metadata ${this.description}: `, error);
    }
    if (result.status === "not-modified") {
      if (!this.metadata) throw new Error(`metadata ${this.description}: HTTP 304 with none read yet`);
      return this.metadata;
    }
    const metadata = parseEbaFileMetadata(result.body);
    // Kept whether or not the file then loads: a 304 next time still says which file is current.
    this.metadata = metadata;
    this.metadataValidators = {
      ...(result.etag ? { etag: result.etag } : {}),
      ...(result.lastModified ? { lastModified: result.lastModified } : {}),
    };
    return metadata;
  }
}

/** The file a metadata answer names, fit for logs and status: URL without credentials, and when it was made. */
function describeFile(metadata: EbaFileMetadata): string {
  return `${withoutCredentials(metadata.fileUrl)} of ${metadata.timestamp}`;
}

export interface RegisterSourceConfig extends MetadataRegisterSourceOptions {
  /** The register layer this source fills (see TppRegister's `sources`). */
  readonly name: string;
  readonly file?: string;
  readonly url?: string;
  /** The EBA's metadata URL, which names the current ZIP. */
  readonly metadata?: string;
  readonly pollMs: number;
}

/** The source for one configured layer: a file, a URL or an EBA metadata URL (exactly one). */
export function createRegisterSource(
  config: RegisterSourceConfig,
  register: TppRegister,
  log: RegisterLog = () => {},
): RegisterSource {
  const layer = register.layer(config.name);
  const given = [config.file, config.url, config.metadata].filter((w) => w !== undefined).length;
  if (given !== 1) {
    throw new Error(`register source '${config.name}' needs exactly one of file, url and metadata`);
  }
  if (config.metadata !== undefined)
    return new MetadataRegisterSource(config.metadata, layer, config.pollMs, log, config);
  return config.file !== undefined
    ? new FileRegisterSource(config.file, layer, config.pollMs, log, config)
    : new HttpRegisterSource(config.url!, layer, config.pollMs, log, config);
}

/**
 * The TPP register's sources, one per layer, as one trust source: all loaded at once before the
 * gateway serves, then each on its own schedule; the status is each layer's.
 */
export class RegisterTrustSource implements TrustSource {
  readonly name = "register";

  constructor(
    private readonly register: TppRegister,
    private readonly sources: readonly RegisterSource[],
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    for (const source of this.sources) source.start();
  }

  async refresh(): Promise<void> {
    await Promise.all(this.sources.map((s) => s.refresh()));
  }

  status(): TrustSourceStatus[] {
    return this.register.stats.sources.map((s) => {
      const held = this.sources.flatMap((source) =>
        source.name === s.name && source.held !== undefined ? [source.held] : [],
      );
      return {
        kind: "register" as const,
        source: `${s.name}: ${s.description ?? "not loaded"}`,
        ...(held.length > 0 ? { held: held.join(", ") } : {}),
        lastSuccess: s.lastSuccess,
        failures: s.failures,
        ...(s.lastError ? { lastError: s.lastError } : {}),
        size: s.entries,
        stale: !s.fresh,
        failsReadiness: true,
      };
    });
  }

  stop(): void {
    for (const source of this.sources) source.stop();
  }
}
