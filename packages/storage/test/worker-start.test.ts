/**
 * The worker start every package shares (core's tile pool, sporadik's codec workers, anndata's
 * HDF5 thread): the host's Node options pass to its workers, less those of its own entry.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { workerExecArgv } from "@deltacells/storage/internal/node";

test("workers keep the host's loader options and drop those of its -e/-p entry", () => {
  assert.deepEqual(
    workerExecArgv(["--import", "tsx", "--conditions=source", "--input-type=module", "-e", "code()"]),
    ["--import", "tsx", "--conditions=source"],
  );
  assert.deepEqual(workerExecArgv(["--input-type", "module", "--print", "1", "--max-old-space-size=512"]), [
    "--max-old-space-size=512",
  ]);
  assert.deepEqual(workerExecArgv(["--test", "--test-reporter=tap", "--enable-source-maps"]), [
    "--enable-source-maps",
  ]);
});
