/** Opening datasets and outputs for the commands, with request counting for `--stats`. */
import { readdir, stat } from "node:fs/promises";
import {
  type Dataset,
  isDeltacellsError,
  type OpenDatasetOptions,
  openDataset,
  type TileDecoder,
} from "@deltacells/core";
import type { OpenAtlasTargetOptions, OpenTargetOptions } from "@deltacells/core/node";
import type { StoreInfo } from "@deltacells/sporadik";
import { localPath, openStore, type StatsStore, type Store, withStats } from "@deltacells/storage/node";
import { network, s3Signing } from "./args.js";
import { CliError } from "./errors.js";

/**
 * A local path or URL (s3://, http(s)://, file://) opened as a store, signing S3 requests unless
 * `--no-sign-request`, and retrying remote reads and timing out stalls as `--retries` and
 * `--timeout` say. Local folders read small objects by blocking calls: a command has nothing
 * else for its event loop to do, and a chunked sporadik batch read ran 1.7-2x faster this way.
 */
export function openLocation(location: string): Store {
  return openStore(location, {
    ...network,
    folder: { blockingReads: true },
    ...(s3Signing.signRequests ? {} : { s3: { signRequests: false } }),
  });
}

/** A local path or URL (s3://, http(s)://, file://) opened as a store that counts its requests. */
export function openCounted(location: string): StatsStore {
  return withStats(openLocation(location));
}

/**
 * How a command opens its target: through {@link openCounted}, the lock recording the command
 * (`writer`), messages naming its flags, and the lock released on Ctrl-C and SIGTERM.
 */
export function targetOptions(writer = "deltacells convert") {
  return {
    open: openCounted,
    writer,
    optionNames: { overwrite: "--overwrite", breakLock: "--break-lock" },
    releaseOnSignal: true,
  } satisfies OpenTargetOptions;
}

/** {@link targetOptions} of an atlas step, whose refusal of a complete dataset names the commands. */
export function atlasTargetOptions(writer: string) {
  return {
    ...targetOptions(writer),
    finalizedHint:
      "add cells to it with deltacells append, build the atlas elsewhere, or replace it with deltacells convert ... --overwrite",
  } satisfies Omit<OpenAtlasTargetOptions, "writer"> & { writer: string };
}

/** Nothing at all is at a location: no folder, or an empty one or prefix. */
export class NothingThereError extends CliError {
  declare readonly _tag: "NotFound";
  constructor(message: string, options: { object: string }) {
    super(message, {
      tag: "NotFound",
      object: options.object,
      expected: "a dataset or a store",
      found: "nothing",
    });
    this.name = "NothingThereError";
  }

  /** The error for `location`. */
  static at(location: string): NothingThereError {
    return new NothingThereError(
      `${location}: nothing is there (no such folder, or an empty one): check the path`,
      { object: location },
    );
  }
}

/**
 * `err` (a dataset without a manifest) replaced by {@link NothingThereError} when the location
 * holds nothing at all, and by a `NotAStore` error when it is a local file (an `.h5ad`, say):
 * "convert it again" would send the user after a conversion that never was. Only a folder or a
 * listable store can tell; an HTTP location keeps the dataset's error.
 */
async function orNothingThere(store: StatsStore, err: unknown): Promise<unknown> {
  const path = localPath(store.url);
  if (path !== undefined) {
    const s = await stat(path).catch(() => undefined);
    if (!s || (s.isDirectory() && (await readdir(path)).length === 0)) return NothingThereError.at(store.url);
    // `deltacells inspect pbmc.h5ad`: the input of a conversion, not its output.
    if (s.isFile())
      return new CliError(
        `${store.url} is a file, not a dataset: these commands read what \`deltacells convert\` writes (a folder or a bucket prefix). Convert it first: deltacells convert ${path} OUTPUT`,
        { tag: "NotAStore", object: store.url, expected: "a dataset folder", found: "a file", cause: err },
      );
    return err;
  }
  const keys = await store.list().catch(() => undefined);
  return keys?.length === 0 ? NothingThereError.at(store.url) : err;
}

/** Open the dataset at `location` through a counting store (`options`: e.g. the obs cache). */
export async function openCountedDataset(
  location: string,
  decoder?: TileDecoder,
  options: Omit<OpenDatasetOptions, "decoder"> = {},
) {
  const store = openCounted(location);
  try {
    const ds = await openDataset(store, decoder ? { ...options, decoder } : options);
    return { store, ds };
  } catch (err) {
    throw isDeltacellsError(err, "IncompleteDataset") ? await orNothingThere(store, err) : err;
  }
}

/** What `inspect` and `validate` accept: a deltacells dataset or a sporadik store. */
export type Opened =
  | { kind: "deltacells"; store: StatsStore; ds: Dataset }
  | { kind: "sporadik"; store: StatsStore; info: StoreInfo };

/**
 * A deltacells dataset (manifest.json) or, when there is none but there is a root zarr.json, a
 * sporadik store, described (and refused, when its block is missing or wrong, by sporadik's own
 * checks). A location with neither is refused with the dataset's error. A dataset costs no extra
 * request; the counts of a sporadik store start after the probe, at its description.
 */
export async function openCountedAny(location: string, decoder?: TileDecoder): Promise<Opened> {
  try {
    return { kind: "deltacells", ...(await openCountedDataset(location, decoder)) };
  } catch (err) {
    if (!(isDeltacellsError(err) && err._tag === "IncompleteDataset")) throw err;
    const store = openCounted(location);
    if ((await store.get("zarr.json")) === undefined) throw err;
    store.reset();
    const { describe } = await import("@deltacells/sporadik");
    try {
      return { kind: "sporadik", store, info: await describe(store) };
    } catch (cause) {
      throw NeitherError.of(store.url, cause);
    }
  }
}

/**
 * A location with neither a deltacells manifest nor a readable sporadik store; `found` is the tag
 * of the sporadik reader's refusal (its `cause`).
 */
export class NeitherError extends CliError {
  declare readonly _tag: "NotAStore";
  constructor(message: string, options: { object: string; found?: unknown; cause: unknown }) {
    super(message, { ...options, tag: "NotAStore", expected: "a deltacells dataset or a sporadik store" });
    this.name = "NeitherError";
  }

  /** The error for `location`, whose sporadik reading failed with `cause`. */
  static of(location: string, cause: unknown): NeitherError {
    const c = cause as { _tag?: string; message?: string };
    return new NeitherError(
      `${location} is neither a deltacells dataset (it has no manifest.json) nor a readable sporadik store: ${c.message ?? String(cause)}`,
      { object: location, found: c._tag, cause },
    );
  }
}
