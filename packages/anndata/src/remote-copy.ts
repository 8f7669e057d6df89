/**
 * Matrix Market inputs given as URLs: the objects are copied through the caller's store into a
 * temporary folder and read from there (the reader makes two passes, and needs a seekable file),
 * which is removed when the source closes. Node-only.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AnndataError, objectIn } from "./errors.js";
import type { MatrixSource, RemoteStore } from "./types.js";

/** The files of a 10x Matrix Market folder, each looked for under its names in this order. */
export const TENX_MTX_FILES = [
  ["matrix.mtx.gz", "matrix.mtx"],
  ["features.tsv.gz", "features.tsv", "genes.tsv"],
  ["barcodes.tsv.gz", "barcodes.tsv"],
];

/**
 * Copies, for each group of names, the first object the store has into a fresh temporary folder;
 * a group with none is an error naming `url`. Returns the folder.
 */
export async function copyToTemp(store: RemoteStore, url: string, groups: string[][]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "deltacells-input-"));
  try {
    for (const names of groups) {
      let found = false;
      for (const name of names) {
        const bytes = await store.get(name);
        if (bytes === undefined) continue;
        await writeFile(join(dir, name), bytes);
        found = true;
        break;
      }
      if (!found) {
        throw new AnndataError(`${url}: no ${names.join(" or ")} there.`, {
          tag: "MalformedInput",
          object: objectIn(url, names[0]),
        });
      }
    }
    return dir;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** `source`, whose `close` also removes the temporary folder it reads from. */
export function removingOnClose<S extends MatrixSource>(source: S, dir: string): S {
  const close = source.close.bind(source);
  source.close = async () => {
    try {
      await close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
  return source;
}
