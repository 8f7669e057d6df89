/**
 * Objects written to a folder piece by piece (Node only), so a byte-addressable array (one raw
 * object, as large as the array) never has to be held whole. Each object is written to a temporary
 * name beside its final one, synced, and renamed into place, as the folder store writes objects.
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import type { PartsWritableStore } from "./array-stream.js";
import { IncompleteError, SporadikError } from "./errors.js";
import type { WritableStore } from "./store.js";

/**
 * `store` (a folder store rooted at `root`) with `setParts`: every other call goes to `store`
 * unchanged. `onWritten` hears the bytes of each object written in parts (which `store`'s own
 * counters, if any, never see).
 */
export function withFileParts(
  store: WritableStore,
  root: string,
  onWritten?: (key: string, bytes: number) => void,
): PartsWritableStore {
  const base = resolve(root);
  const pathOf = (key: string): string => {
    const path = resolve(join(base, key));
    if (!path.startsWith(base + sep)) {
      throw new SporadikError(`key ${key} resolves outside the folder ${base}; keys stay inside the store.`, {
        tag: "ArgumentError",
        object: key,
      });
    }
    return path;
  };
  return {
    get: (key, options) => store.get(key, options),
    ...(store.getRange ? { getRange: store.getRange.bind(store) } : {}),
    set: (key, value) => store.set(key, value),
    ...(store.delete ? { delete: store.delete.bind(store) } : {}),
    async setParts(key, byteLength, parts) {
      const path = pathOf(key);
      const temporary = `${path}.sporadik-part-${randomBytes(6).toString("hex")}`;
      await mkdir(dirname(path), { recursive: true });
      try {
        const handle = await open(temporary, "w");
        let written = 0;
        try {
          for await (const part of parts) {
            await handle.write(part);
            written += part.byteLength;
          }
          await handle.sync();
        } finally {
          await handle.close();
        }
        if (written !== byteLength) {
          throw new IncompleteError(
            `${key}: ${written} bytes were written, but the object is ${byteLength}.`,
            {
              object: key,
              expected: byteLength,
              found: written,
            },
          );
        }
        await rename(temporary, path);
        onWritten?.(key, written);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    },
  };
}
