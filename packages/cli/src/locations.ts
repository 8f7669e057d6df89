/**
 * How one command reaches its locations. Light (storage only): `deltacells stream` parses its
 * arguments, with this, before it loads the dataset reader.
 */
import type { OpenAtlasTargetOptions, OpenTargetOptions } from "@deltacells/core/node";
import { DEFAULT_RETRIES, DEFAULT_TIMEOUT_SECONDS } from "@deltacells/storage";
import { openStore, type StatsStore, type Store, withStats } from "@deltacells/storage/node";

/** How one command line reaches its locations: `--no-sign-request`, `--retries`, `--timeout`. */
export interface LocationSettings {
  /** Sign S3 requests (off with `--no-sign-request`, for public buckets). */
  signRequests: boolean;
  /** Retries of a remote read that failed for a transient reason. */
  retries: number;
  /** Milliseconds a remote request may receive nothing before it fails (0: never). */
  timeoutMs: number;
}

/** What a command line without those options says. */
export const DEFAULT_LOCATION_SETTINGS: Readonly<LocationSettings> = Object.freeze({
  signRequests: true,
  retries: DEFAULT_RETRIES,
  timeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000,
});

/**
 * One command's way to its locations: every store it opens, with its own command line's settings.
 * `parse` makes one per command line, and the command hands it to whatever opens a location, so
 * commands run in one process (tests, a program calling `run`) never change each other's.
 */
export class Locations {
  constructor(readonly settings: Readonly<LocationSettings> = DEFAULT_LOCATION_SETTINGS) {}

  /**
   * A local path or URL (s3://, http(s)://, file://) opened as a store, signing S3 requests
   * unless `--no-sign-request`, and retrying remote reads and timing out stalls as `--retries`
   * and `--timeout` say. Local folders read small objects by blocking calls: a command has
   * nothing else for its event loop to do, and a chunked sporadik batch read ran 1.7-2x faster
   * this way.
   */
  open(location: string): Store {
    const { signRequests, retries, timeoutMs } = this.settings;
    return openStore(location, {
      retries,
      timeoutMs,
      folder: { blockingReads: true },
      ...(signRequests ? {} : { s3: { signRequests: false } }),
    });
  }

  /** {@link open}, counting the store's requests (for `--stats`). */
  openCounted(location: string): StatsStore {
    return withStats(this.open(location));
  }

  /**
   * How a command opens its target: through {@link openCounted}, the lock recording the command
   * (`writer`), messages naming its flags, and the lock released on Ctrl-C and SIGTERM.
   */
  targetOptions(writer = "deltacells convert") {
    return {
      open: (location: string) => this.openCounted(location),
      writer,
      optionNames: { overwrite: "--overwrite", breakLock: "--break-lock" },
      releaseOnSignal: true,
    } satisfies OpenTargetOptions;
  }

  /** {@link targetOptions} of an atlas step, whose refusal of a complete dataset names the commands. */
  atlasTargetOptions(writer: string) {
    return {
      ...this.targetOptions(writer),
      finalizedHint:
        "add cells to it with deltacells append, build the atlas elsewhere, or replace it with deltacells convert ... --overwrite",
    } satisfies OpenAtlasTargetOptions;
  }
}
