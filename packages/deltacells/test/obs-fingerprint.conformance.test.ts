/**
 * The obs fingerprint equals Python's recipe exactly, including the escaping of non-ASCII,
 * control characters and DEL that `json.dumps` does by default (ensure_ascii).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join, resolve } from "node:path";
import { test } from "node:test";
import {
  checkFingerprint,
  fingerprintJson,
  obsFingerprint,
  pythonJsonString,
} from "../src/obs/fingerprint.js";

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

test("each spelling readers accept is byte for byte a json.dumps of the same document, and only those match", async () => {
  const schema = `{"columns": [{"name": "cell type/ü \\"q\\"\\t\\u007f😀", "kind": "string"}]}\n\u2028`;
  const tiles = [4096, 17];
  const shards = ["ef".repeat(32)];
  const py = execFileSync(
    PYTHON,
    [
      "-c",
      [
        "import hashlib, json, sys",
        "d = json.loads(sys.stdin.read())",
        'doc = {"schema": d["schema"], "tile_cells": d["tiles"], "shards": d["shards"]}',
        "for sep in ((',', ':'), (', ', ': ')):",
        "    for ascii in (True, False):",
        "        text = json.dumps(doc, sort_keys=True, separators=sep, ensure_ascii=ascii)",
        '        print(json.dumps([text, hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]]))',
      ].join("\n"),
    ],
    { input: JSON.stringify({ schema, tiles, shards }) },
  )
    .toString()
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as [string, string]);
  const spellings = [
    { spaced: false, ascii: true },
    { spaced: false, ascii: false },
    { spaced: true, ascii: true },
    { spaced: true, ascii: false },
  ];
  for (const [i, spelling] of spellings.entries()) {
    const [text, fp] = py[i]!;
    assert.equal(fingerprintJson(schema, tiles, shards, spelling), text, JSON.stringify(spelling));
    assert.equal(await obsFingerprint(schema, tiles, shards, spelling), fp);
    assert.deepEqual(await checkFingerprint(fp, schema, tiles, shards), { matches: true, strict: py[0]![1] });
  }
  // the same spellings of other content do not match
  const other = await obsFingerprint(`${schema} `, tiles, shards, { spaced: true, ascii: true });
  assert.equal((await checkFingerprint(other, schema, tiles, shards)).matches, false);
});
