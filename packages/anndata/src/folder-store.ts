/** A read-only zarrita store over a local folder. Node-only. */

import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { ZarrTreeStore } from "./zarr-tree.js";

const METADATA = [".zarray", ".zgroup", "zarr.json"];

export class LocalZarrStore implements ZarrTreeStore {
  constructor(readonly root: string) {}

  async get(key: `/${string}`): Promise<Uint8Array | undefined> {
    if (key.split("/").includes("..")) return undefined;
    try {
      const b = await readFile(join(this.root, key));
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    } catch (err) {
      if (
        (err as NodeJS.ErrnoException).code === "ENOENT" ||
        (err as NodeJS.ErrnoException).code === "EISDIR"
      )
        return undefined;
      throw err;
    }
  }

  async children(path: string): Promise<string[]> {
    const dir = join(this.root, path);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return [];
    }
    const out: string[] = [];
    for (const name of names.sort()) {
      if (name.startsWith(".")) continue;
      for (const m of METADATA) {
        try {
          await stat(join(dir, name, m));
          out.push(name);
          break;
        } catch {
          // not a zarr node
        }
      }
    }
    return out;
  }
}
