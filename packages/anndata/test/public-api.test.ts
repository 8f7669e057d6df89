/**
 * The public API of @deltacells/anndata, pinned (as zarrita's tests pin theirs): what each entry
 * point exports at run time, with its kind. A change here is a change to what users can import:
 * make it on purpose, and say it in CHANGELOG.md.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as browser from "@deltacells/anndata";
import * as node from "@deltacells/anndata/node";
import { assertSuperset, exportsOf } from "../../../test-utils/public-api.js";

test("@deltacells/anndata exports exactly these names", () => {
  assert.deepEqual(exportsOf(browser), [
    "AnndataError: class",
    "NotCountsError: class",
    "UnsupportedColumnsError: class",
    "UnsupportedFilterError: class",
    "isAnndataError: function",
  ]);
});

test("@deltacells/anndata/node exports exactly these names", () => {
  assert.deepEqual(exportsOf(node), [
    "AnndataError: class",
    "NotCountsError: class",
    "TENX_FILES: object",
    "UnsupportedColumnsError: class",
    "UnsupportedFilterError: class",
    "detectFormat: function",
    "hdf5Reason: function",
    "isAnndataError: function",
    "openInput: function",
    "reorderRows: function",
    "tenxBarcodes: function",
    "tenxFeatures: function",
    "writeH5ad: function",
    "writeMatrixMarket: function",
    "writeTsv: function",
  ]);
});

test("@deltacells/anndata/node is a superset of @deltacells/anndata (nothing replaced)", () => {
  assertSuperset(browser, node, []);
});
