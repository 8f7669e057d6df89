import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { StorageError } from "./errors.js";
import { normalizeKey, normalizePrefix } from "./keys.js";
import { resolveRange, throwIfAborted } from "./range.js";
import type { RangeQuery, Store, StoreOptions } from "./types.js";

/** Suffix of in-flight writes; `list` hides them so a reader never sees a half-written object. */
const TEMP_MARK = ".dctmp-";

function isMissing(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/**
 * A local folder. Writes go to a temporary file in the target's directory and are renamed into
 * place, so a concurrent reader sees either the old object or the whole new one, and a crash
 * leaves at worst a hidden temporary file, never a truncated object.
 */
export class FolderStore implements Store {
  readonly root: string;
  readonly url: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.url = this.root;
  }

  private path(key: string): string {
    const p = join(this.root, normalizeKey(key, this.url));
    // normalizeKey already refuses "..", this is a second fence against symlink-free escapes.
    if (!p.startsWith(this.root + sep)) {
      throw new StorageError(`key ${key} resolves outside the store root ${this.root}`, {
        tag: "InvalidKey",
        key,
        location: this.url,
      });
    }
    return p;
  }

  private wrap(err: unknown, what: string, key: string): StorageError {
    if (err instanceof StorageError) return err;
    return new StorageError(`${what} ${key} in ${this.root} failed: ${(err as Error).message}`, {
      key,
      location: this.url,
      cause: err,
    });
  }

  async get(key: string, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    throwIfAborted(opts?.signal);
    const path = this.path(key);
    try {
      const buf = await readFile(path, { signal: opts?.signal });
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (err) {
      if (isMissing(err)) return undefined;
      if ((err as Error).name === "AbortError") throw err;
      throw this.wrap(err, "reading", key);
    }
  }

  async getRange(key: string, range: RangeQuery, opts?: StoreOptions): Promise<Uint8Array | undefined> {
    throwIfAborted(opts?.signal);
    const path = this.path(key);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, "r");
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw this.wrap(err, "opening", key);
    }
    try {
      const { size } = await handle.stat();
      const { start, end } = resolveRange(range, size, key, this.url);
      const out = new Uint8Array(end - start);
      let done = 0;
      while (done < out.length) {
        throwIfAborted(opts?.signal);
        const { bytesRead } = await handle.read(out, done, out.length - done, start + done);
        if (bytesRead === 0) {
          throw new StorageError(`${key} shrank while being read (${done} of ${out.length} bytes)`, {
            tag: "RangeNotSatisfiable",
            key,
            location: this.url,
          });
        }
        done += bytesRead;
      }
      return out;
    } finally {
      await handle.close();
    }
  }

  async set(key: string, value: Uint8Array, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const path = this.path(key);
    const tmp = `${path}${TEMP_MARK}${randomBytes(6).toString("hex")}`;
    try {
      await mkdir(dirname(path), { recursive: true });
      const handle = await open(tmp, "w");
      try {
        await handle.writeFile(value);
        await handle.sync();
      } finally {
        await handle.close();
      }
      throwIfAborted(opts?.signal);
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      if ((err as Error).name === "AbortError") throw err;
      throw this.wrap(err, "writing", key);
    }
  }

  async delete(key: string, opts?: StoreOptions): Promise<void> {
    throwIfAborted(opts?.signal);
    const path = this.path(key);
    try {
      await rm(path, { force: true });
    } catch (err) {
      throw this.wrap(err, "deleting", key);
    }
  }

  async list(prefix?: string, opts?: StoreOptions): Promise<string[]> {
    throwIfAborted(opts?.signal);
    const p = normalizePrefix(prefix, this.url);
    const out: string[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries: import("node:fs").Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (isMissing(err)) return;
        throw this.wrap(err, "listing", rel || ".");
      }
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) {
          // Only descend where the prefix can still match.
          if (key.startsWith(p) || p.startsWith(`${key}/`)) await walk(join(dir, e.name), key);
        } else if (!e.name.includes(TEMP_MARK) && key.startsWith(p)) {
          out.push(key);
        }
      }
    };
    await walk(this.root, "");
    return out.sort();
  }
}
