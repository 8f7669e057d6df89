/**
 * The public API of @deltacells/storage, pinned (as zarrita's tests pin theirs): what each entry
 * point exports at run time, with its kind. A change here is a change to what users can import:
 * make it on purpose, and say it in CHANGELOG.md.
 * `./internal` and `./internal/node` are what the other deltacells packages share; they are
 * unstable by design.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as browser from "@deltacells/storage";
import * as internal from "@deltacells/storage/internal";
import * as internalNode from "@deltacells/storage/internal/node";
import * as node from "@deltacells/storage/node";
import { assertSuperset, exportsOf } from "../../../test-utils/public-api.js";

test("@deltacells/storage exports exactly these names", () => {
  assert.deepEqual(exportsOf(browser), [
    "CoalescingStore: class",
    "ConcurrencyLimitStore: class",
    "DEFAULT_MAX_IGNORED_RANGE_BYTES: number",
    "DEFAULT_RETRIES: number",
    "DEFAULT_TIMEOUT_SECONDS: number",
    "DELTACELLS_ERROR: symbol",
    "HttpStatusError: class",
    "HttpStore: class",
    "MemoryStore: class",
    "RetriesExhaustedError: class",
    "RetryStore: class",
    "S3Store: class",
    "S3_MIN_PART_SIZE: number",
    "StatsStore: class",
    "StorageError: class",
    "TaggedError: class",
    "isDeltacellsFamilyError: function",
    "isRemoteLocation: function",
    "isStorageError: function",
    "isTransient: function",
    "joinLocation: function",
    "openStore: function",
    "parseLocation: function",
    "s3OptionsFromEnv: function",
    "withCoalescing: function",
    "withConcurrencyLimit: function",
    "withRetries: function",
    "withStallTimeout: function",
    "withStats: function",
  ]);
});

test("@deltacells/storage/node exports exactly these names", () => {
  assert.deepEqual(exportsOf(node), [
    "CoalescingStore: class",
    "ConcurrencyLimitStore: class",
    "DEFAULT_MAX_IGNORED_RANGE_BYTES: number",
    "DEFAULT_RETRIES: number",
    "DEFAULT_TIMEOUT_SECONDS: number",
    "DELTACELLS_ERROR: symbol",
    "FolderStore: class",
    "HttpStatusError: class",
    "HttpStore: class",
    "MemoryStore: class",
    "RetriesExhaustedError: class",
    "RetryStore: class",
    "S3Store: class",
    "S3_MIN_PART_SIZE: number",
    "StatsStore: class",
    "StorageError: class",
    "TaggedError: class",
    "isDeltacellsFamilyError: function",
    "isRemoteLocation: function",
    "isStorageError: function",
    "isTransient: function",
    "joinLocation: function",
    "localPath: function",
    "openStore: function",
    "parseLocation: function",
    "processAlive: function",
    "s3OptionsFromEnv: function",
    "withCoalescing: function",
    "withConcurrencyLimit: function",
    "withRetries: function",
    "withStallTimeout: function",
    "withStats: function",
  ]);
});

test("@deltacells/storage/internal exports exactly these names", () => {
  assert.deepEqual(exportsOf(internal), ["formatBytes: function"]);
});

test("@deltacells/storage/internal/node exports exactly these names", () => {
  assert.deepEqual(exportsOf(internalNode), [
    "newWorker: function",
    "startWorker: function",
    "workerExecArgv: function",
  ]);
});

test("@deltacells/storage/node is a superset of @deltacells/storage (its own `openStore` replacing the browser-safe one)", () => {
  assertSuperset(browser, node, ["openStore"]);
});
