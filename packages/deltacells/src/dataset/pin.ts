/**
 * A dataset's version pin: reads refuse an object changed after the manifest was read (the store's
 * `unchangedSince`), and the store's `Changed` becomes `DatasetChanged`, naming the dataset.
 * Shared by the tile and gene-file reads and the obs shards' reads.
 */
import { isStorageError } from "@deltacells/storage";
import { DeltacellsError } from "../errors.js";

/** The read option that refuses objects changed since `openedAt` (none when the store told no time). */
export function pinned(openedAt: number | undefined): { unchangedSince?: number } {
  return openedAt === undefined ? {} : { unchangedSince: openedAt };
}

/** `err` as thrown by a read of `key` of the dataset at `url`; a store's `Changed` becomes `DatasetChanged`. */
export function rethrowChanged(err: unknown, url: string, key: string): never {
  if (!isStorageError(err, "Changed")) throw err;
  throw new DeltacellsError(
    `${url} changed since it was opened: ${key} was rewritten after the manifest was read (${err.message}). Reading on would mix two versions of the dataset: open it again`,
    { tag: "DatasetChanged", object: `${url}/${key}`, cause: err },
  );
}
