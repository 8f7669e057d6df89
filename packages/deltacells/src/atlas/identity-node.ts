/**
 * How a local input is identified between its scan and the tasks that read it: its size and
 * latest modification time (a folder's: of all its files). Cheap where a content hash of a
 * hundred-gigabyte input is not; URLs are not identified (null). Node-only.
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { localPath } from "@deltacells/storage/node";
import type { InputIdentity } from "./scan.js";

/** The size and latest change of the file or folder at `location`, or null for a URL. */
export async function inputIdentity(location: string): Promise<InputIdentity | null> {
  const path = localPath(location);
  if (path === undefined) return null;
  const s = await stat(path);
  if (!s.isDirectory()) return { bytes: s.size, mtime: new Date(s.mtimeMs).toISOString() };
  let bytes = 0;
  let latest = s.mtimeMs;
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        const f = await stat(p);
        bytes += f.size;
        latest = Math.max(latest, f.mtimeMs);
      }
    }
  };
  await walk(path);
  return { bytes, mtime: new Date(latest).toISOString() };
}
