/** Opening datasets and outputs for the commands, with request counting for `--stats`. */
import { readdir, stat } from "node:fs/promises";
import {
  type Dataset,
  isDeltacellsError,
  type OpenDatasetOptions,
  openDataset,
  type TileDecoder,
} from "@deltacells/core";
import type { StoreInfo } from "@deltacells/sporadik";
import { localPath, type StatsStore } from "@deltacells/storage/node";
import { CliError } from "./errors.js";
import type { Locations } from "./locations.js";

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

/** What `inspect` and `validate` accept: a deltacells dataset or a sporadik store. */
export type Opened =
  | { kind: "deltacells"; store: StatsStore; ds: Dataset }
  | { kind: "sporadik"; store: StatsStore; info: StoreInfo };

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

/**
 * Open the dataset at `location` through a counting store of the command's `locations`
 * (`options`: e.g. the obs cache).
 */
export async function openCountedDataset(
  locations: Locations,
  location: string,
  decoder?: TileDecoder,
  options: Omit<OpenDatasetOptions, "decoder"> = {},
) {
  const store = locations.openCounted(location);
  try {
    const ds = await openDataset(store, decoder ? { ...options, decoder } : options);
    return { store, ds };
  } catch (err) {
    throw isDeltacellsError(err, "IncompleteDataset") ? await orNothingThere(store, err) : err;
  }
}

/**
 * A deltacells dataset (manifest.json) or, when there is none but there is a root zarr.json, a
 * sporadik store, described (and refused, when its block is missing or wrong, by sporadik's own
 * checks). A location with neither is refused with the dataset's error. A dataset costs no extra
 * request; the counts of a sporadik store start after the probe, at its description.
 */
export async function openCountedAny(
  locations: Locations,
  location: string,
  decoder?: TileDecoder,
): Promise<Opened> {
  try {
    return { kind: "deltacells", ...(await openCountedDataset(locations, location, decoder)) };
  } catch (err) {
    if (!(isDeltacellsError(err) && err._tag === "IncompleteDataset")) throw err;
    const store = locations.openCounted(location);
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
