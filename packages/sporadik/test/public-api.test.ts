/**
 * The public API of @deltacells/sporadik, pinned (as zarrita's tests pin theirs): what each entry
 * point exports at run time, with its kind. A change here is a change to what users can import:
 * make it on purpose, and say it in CHANGELOG.md.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as browser from "@deltacells/sporadik";
import * as node from "@deltacells/sporadik/node";
import * as spec from "@deltacells/sporadik/spec";
import { assertSuperset, exportsOf } from "../../../test-utils/public-api.js";

test("@deltacells/sporadik exports exactly these names", () => {
  assert.deepEqual(exportsOf(browser), [
    "DEFAULT_CHUNK: number",
    "DecodeWorkerError: class",
    "IncompleteError: class",
    "LayoutError: class",
    "MemorySpill: class",
    "PositionError: class",
    "Selection: class",
    "SparseArray: class",
    "SparseArrayReader: class",
    "SparseReader: class",
    "SpecError: class",
    "SporadikError: class",
    "StreamWriter: class",
    "TARGET_CHUNK_BYTES: number",
    "chunkFor: function",
    "coordsOfLayout: function",
    "describe: function",
    "isSporadikError: function",
    "layoutFromCompressed: function",
    "layoutFromCoords: function",
    "layoutFromDense: function",
    "layoutOver: function",
    "layoutsByAxis: function",
    "maximaOf: function",
    "openArrayReader: function",
    "openReader: function",
    "temporaryBytesPerNonzero: function",
    "wasmEncoder: function",
    "writeStore: function",
    "writeStoreFromRows: function",
  ]);
});

test("@deltacells/sporadik/node exports exactly these names", () => {
  assert.deepEqual(exportsOf(node), [
    "DEFAULT_CHUNK: number",
    "DecodeWorkerError: class",
    "EncodePool: class",
    "FileSpill: class",
    "IncompleteError: class",
    "LayoutError: class",
    "MemorySpill: class",
    "NoTempSpaceError: class",
    "PositionError: class",
    "Selection: class",
    "SparseArray: class",
    "SparseArrayReader: class",
    "SparseReader: class",
    "SpecError: class",
    "SporadikError: class",
    "StreamWriter: class",
    "TARGET_CHUNK_BYTES: number",
    "TRANSPOSE_MEMORY: number",
    "TooManyNonzerosError: class",
    "chunkFor: function",
    "closeDecodeWorkers: function",
    "convertToStore: function",
    "coordsOfLayout: function",
    "describe: function",
    "isSporadikError: function",
    "layoutFromCompressed: function",
    "layoutFromCoords: function",
    "layoutFromDense: function",
    "layoutOver: function",
    "layoutsByAxis: function",
    "maximaOf: function",
    "nativeDecompressors: object",
    "nativeEncoder: function",
    "nativeZstd: function",
    "openArrayReader: function",
    "openReader: function",
    "pooledZstd: function",
    "sweepStaleSpills: function",
    "temporaryBytesPerNonzero: function",
    "wasmEncoder: function",
    "withFileParts: function",
    "writeStore: function",
    "writeStoreFromRowBlocks: function",
    "writeStoreFromRows: function",
  ]);
});

test("@deltacells/sporadik/spec exports exactly these names", () => {
  assert.deepEqual(exportsOf(spec), [
    "BLOCK_KEY: string",
    "ENCODINGS: object",
    "ENCODING_VERSION: string",
    "LAYOUTS_GROUP: string",
    "MIN_RANK: number",
    "SPEC_VERSION: string",
    "SUPPORTED_SPECS: set",
    "anndataEncoding: function",
    "blockFor: function",
    "layoutPath: function",
    "raveledShape: function",
  ]);
});

test("@deltacells/sporadik/node is a superset of @deltacells/sporadik (its own `openArrayReader` and `openReader` replacing the browser-safe ones)", () => {
  assertSuperset(browser, node, ["openArrayReader", "openReader"]);
});
