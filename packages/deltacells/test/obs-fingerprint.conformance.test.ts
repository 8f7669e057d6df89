/**
 * The obs fingerprint equals Python's recipe exactly, including the escaping of non-ASCII,
 * control characters and DEL that `json.dumps` does by default (ensure_ascii).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { fingerprintJson, obsFingerprint, pythonJsonString } from "../src/obs/fingerprint.js";

const REPO = resolve(import.meta.dirname, "../../..");
const PYTHON = join(REPO, "conformance/.venv/bin/python");

test("the fingerprint JSON is byte for byte Python's json.dumps(sort_keys=True, separators=(',', ':'))", async () => {
  const schema = `{"columns": [{"name": "cell type/ü \\"q\\"\\t\\u007f😀", "kind": "string"}]}\n\u2028`;
  const tiles = [4096, 4096, 17];
  const shards = ["ab".repeat(32), "cd".repeat(32)];
  const py = execFileSync(
    PYTHON,
    [
      "-c",
      [
        "import hashlib, json, sys",
        "d = json.loads(sys.stdin.read())",
        'text = json.dumps({"schema": d["schema"], "tile_cells": d["tiles"], "shards": d["shards"]}, sort_keys=True, separators=(",", ":"))',
        "print(text)",
        'print(hashlib.sha256(text.encode("utf-8")).hexdigest()[:24])',
      ].join("\n"),
    ],
    { input: JSON.stringify({ schema, tiles, shards }) },
  )
    .toString()
    .split("\n");
  assert.equal(fingerprintJson(schema, tiles, shards), py[0]);
  assert.equal(await obsFingerprint(schema, tiles, shards), py[1]);
  assert.equal(pythonJsonString("é\u007f"), '"\\u00e9\\u007f"');
});
