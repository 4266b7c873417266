/**
 * Polls files and folders for changes (mtime and size of every file), for reloads that must not
 * depend on inotify working inside containers and on mounted volumes (Kubernetes secrets swap a
 * symlink, which fs.watch misses).
 */

import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function fingerprint(paths: readonly string[]): string {
  const parts: string[] = [];
  for (const path of paths) {
    try {
      const info = statSync(path);
      if (info.isDirectory()) {
        for (const name of readdirSync(path).sort()) {
          const child = statSync(join(path, name), { throwIfNoEntry: false });
          if (child?.isFile()) parts.push(`${path}/${name}:${child.mtimeMs}:${child.size}`);
        }
      } else {
        parts.push(`${path}:${info.mtimeMs}:${info.size}`);
      }
    } catch {
      parts.push(`${path}:missing`);
    }
  }
  return parts.join("|");
}

export interface FileWatch {
  stop(): void;
  /** Polls every `pollMs` from now on, comparing with what it last saw (a reload's `reload.pollSeconds`). */
  pace(pollMs: number): void;
}

/** Calls `onChange` (at most once per poll) whenever anything under `paths` changed since the last look. */
export function watchFiles(paths: readonly string[], pollMs: number, onChange: () => void): FileWatch {
  let last = fingerprint(paths);
  let stopped = false;
  const every = (ms: number) => {
    const t = setInterval(() => {
      const now = fingerprint(paths);
      if (now === last) return;
      last = now;
      onChange();
    }, ms);
    t.unref();
    return t;
  };
  let timer = every(pollMs);
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
    pace: (ms) => {
      if (stopped) return;
      clearInterval(timer);
      timer = every(ms);
    },
  };
}

/** A watch that follows the configuration in force: its files and its pace. */
export interface FollowedWatch {
  /** After a start or a reload: watches `paths` anew when they changed, else only takes the pace. */
  follow(paths: readonly string[], pollMs: number): void;
  stop(): void;
}

export function followedWatch(onChange: () => void): FollowedWatch {
  let watch: FileWatch | undefined;
  let watchedPaths = "";
  let watchedPollMs = 0;
  return {
    follow(paths, pollMs) {
      const key = JSON.stringify(paths);
      if (watch && key === watchedPaths) {
        // The same files: what the watch last saw is kept, so a change made meanwhile still counts.
        if (pollMs !== watchedPollMs) watch.pace(pollMs);
        watchedPollMs = pollMs;
        return;
      }
      watch?.stop();
      watchedPaths = key;
      watchedPollMs = pollMs;
      watch = watchFiles(paths, pollMs, onChange);
    },
    stop: () => watch?.stop(),
  };
}
