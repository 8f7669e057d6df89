/**
 * The public API of @deltacells/core, pinned (as zarrita's tests pin theirs): what each entry
 * point exports at run time, with its kind. A change here is a change to what users can import:
 * make it on purpose, and say it in CHANGELOG.md.
 * `./internal` is what the other deltacells packages share; it is unstable by design.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as browser from "@deltacells/core";
import * as arrow from "@deltacells/core/arrow";
import * as internal from "@deltacells/core/internal";
import * as node from "@deltacells/core/node";
import { assertSuperset, exportsOf } from "../../../test-utils/public-api.js";

test("@deltacells/core exports exactly these names", () => {
  assert.deepEqual(exportsOf(browser), [
    "APPEND_STAGING: string",
    "ATLAS_PREFIX: string",
    "AtlasIncomplete: class",
    "COMPANION_PATH: string",
    "ConflictingObsColumn: class",
    "DEFAULT_BATCH_SIZE: number",
    "DEFAULT_BUFFER_TILES: number",
    "DEFAULT_LEVEL: number",
    "DEFAULT_MAX_CATEGORIES: number",
    "DEFAULT_MEMORY_CAP: number",
    "DEFAULT_N_CHUNKS: number",
    "DEFAULT_OBS_TILES_PER_FILE: number",
    "DEFAULT_PREFETCH: number",
    "DEFAULT_TILE_SIZE: number",
    "Dataset: class",
    "DeltacellsError: class",
    "MissingScans: class",
    "MixingMeter: class",
    "ObsColumn: class",
    "ObsFrame: class",
    "TARGET_TILE_NNZ: number",
    "UnknownObsExclude: class",
    "UnsupportedObsColumns: class",
    "anndataObs: function",
    "appendToDataset: function",
    "autoTileSize: function",
    "buildAtlas: function",
    "categoryLabels: function",
    "checkIdentity: function",
    "codecInfo: function",
    "companionOf: function",
    "createLoader: function",
    "createTilePool: function",
    "datasetRowBlocks: function",
    "decodeTile: function",
    "decodeTileSync: function",
    "encodeTile: function",
    "encodeTileSync: function",
    "finalizeAtlas: function",
    "formatCodecInfo: function",
    "formatMixing: function",
    "int64Of: function",
    "isDeltacellsError: function",
    "loadZstd: function",
    "memoryLocalizer: function",
    "mixingMeter: function",
    "nameCompanion: function",
    "openDataset: function",
    "planStep: function",
    "readPlan: function",
    "readTileHeader: function",
    "scanDigest: function",
    "scanStep: function",
    "setZstdBackend: function",
    "sourceNames: function",
    "taskStep: function",
    "validateDataset: function",
    "writeDataset: function",
  ]);
});

test("@deltacells/core/node exports exactly these names", () => {
  assert.deepEqual(exportsOf(node), [
    "APPEND_STAGING: string",
    "ATLAS_PREFIX: string",
    "AtlasIncomplete: class",
    "COMPANION_PATH: string",
    "ConflictingObsColumn: class",
    "DEFAULT_BATCH_SIZE: number",
    "DEFAULT_BUFFER_TILES: number",
    "DEFAULT_LEVEL: number",
    "DEFAULT_MAX_CATEGORIES: number",
    "DEFAULT_MEMORY_CAP: number",
    "DEFAULT_N_CHUNKS: number",
    "DEFAULT_OBS_TILES_PER_FILE: number",
    "DEFAULT_PREFETCH: number",
    "DEFAULT_TILE_SIZE: number",
    "Dataset: class",
    "DeltacellsError: class",
    "LOCK_KEY: string",
    "MissingScans: class",
    "MixingMeter: class",
    "ObsColumn: class",
    "ObsFrame: class",
    "STAGING_PREFIX: string",
    "TARGET_TILE_NNZ: number",
    "TargetError: class",
    "TargetLockedError: class",
    "UnknownObsExclude: class",
    "UnsupportedObsColumns: class",
    "acquireWriterLock: function",
    "anndataObs: function",
    "appendToDataset: function",
    "appendToDatasetAt: function",
    "autoTileSize: function",
    "buildAtlas: function",
    "buildAtlasAt: function",
    "cacheLocalizer: function",
    "categoryLabels: function",
    "checkIdentity: function",
    "codecInfo: function",
    "companionOf: function",
    "convertToDataset: function",
    "createLoader: function",
    "createTilePool: function",
    "datasetRowBlocks: function",
    "decodeTile: function",
    "decodeTileSync: function",
    "encodeTile: function",
    "encodeTileSync: function",
    "finalizeAtlas: function",
    "finalizeAtlasAt: function",
    "formatCodecInfo: function",
    "formatMixing: function",
    "inputIdentity: function",
    "int64Of: function",
    "isDeltacellsError: function",
    "loadZstd: function",
    "memoryLocalizer: function",
    "mixingMeter: function",
    "nameCompanion: function",
    "obsCacheRoot: function",
    "openAtlasTarget: function",
    "openDataset: function",
    "openTarget: function",
    "planStep: function",
    "readPlan: function",
    "readTileHeader: function",
    "removeStaleTempFiles: function",
    "scanDigest: function",
    "scanStep: function",
    "setZstdBackend: function",
    "sourceNames: function",
    "taskStep: function",
    "tempFiles: function",
    "validateDataset: function",
    "writeDataset: function",
    "zstdCompressor: function",
  ]);
});

test("@deltacells/core/internal exports exactly these names", () => {
  assert.deepEqual(exportsOf(internal), [
    "DEFAULT_BATCH_SIZE: number",
    "DEFAULT_BUFFER_TILES: number",
    "MANIFEST_KEY: string",
    "PrefixStore: class",
    "numericValues: function",
    "parseManifest: function",
    "poolTileDecoder: function",
    "tileKey: function",
  ]);
});

test("@deltacells/core/node is a superset of @deltacells/core (its own `openDataset` replacing the browser-safe one)", () => {
  assertSuperset(browser, node, ["openDataset"]);
});

test("@deltacells/core/arrow exports exactly these names", () => {
  assert.deepEqual(exportsOf(arrow), [
    "ArrowBatches: class",
    "ArrowOutput: class",
    "END_KEY: string",
    "MAX_LIST_VALUES: number",
    "ReaderGone: class",
    "arrowType: function",
    "columnTable: function",
    "decodeColumnFile: function",
    "encodeColumnFile: function",
    "encodeVarTable: function",
    "endBatch: function",
  ]);
});
