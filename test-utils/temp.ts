/**
 * Temporary folders for tests that are removed when the test process exits, passed or failed, so
 * a run of the suite leaves nothing under the system's temporary folder. For a folder a test must
 * remove at a given point (to check what is left), remove it there as well.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made = new Set<string>();

process.once("exit", () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new empty folder `<tmp>/<prefix>XXXXXX`, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}
