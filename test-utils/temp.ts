/**
 * Temporary folders for tests that are removed when the test process exits, passed or failed, so
 * a run of the suite leaves nothing under the system's temporary folder (a run of the CLI tests
 * makes about a hundred, some tens of MB each). `DELTACELLS_KEEP_TEST_DIRS=1` keeps them for a
 * look after a failure. For a folder a test must remove at a given point (to check what is left),
 * remove it there as well.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made = new Set<string>();

process.once("exit", () => {
  if (process.env.DELTACELLS_KEEP_TEST_DIRS) return;
  for (const dir of made) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // A folder something still writes into (a child that outlived its test): left behind.
    }
  }
});

/** A new empty folder `<tmp>/<prefix>XXXXXX`, removed at exit. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}
