import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as spec from "@deltacells/sporadik/spec";
import { REPO } from "./helpers.js";

test("the normative constants are the ones spec 1 defines", () => {
  assert.equal(spec.SPEC_VERSION, "1");
  assert.ok(spec.SUPPORTED_SPECS.has(spec.SPEC_VERSION));
  assert.equal(spec.BLOCK_KEY, "sporadik");
  assert.equal(spec.LAYOUTS_GROUP, "layouts");
  assert.equal(spec.MIN_RANK, 2);
  assert.deepEqual({ ...spec.ENCODINGS }, { csr_matrix: 0, csc_matrix: 1 });
});

test("a layout is filed under the axis it makes contiguous", () => {
  assert.equal(spec.layoutPath(0), "layouts/axis0");
  assert.equal(spec.layoutPath(3), "layouts/axis3");
});

test("encoding-type is anndata's at rank two and csr_matrix above it", () => {
  assert.equal(spec.anndataEncoding(2, 0), "csr_matrix");
  assert.equal(spec.anndataEncoding(2, 1), "csc_matrix");
  for (const axis of [0, 1, 2]) assert.equal(spec.anndataEncoding(3, axis), "csr_matrix");
});

test("the declared shape is the array's at rank two and the raveled pair above it", () => {
  assert.deepEqual(spec.raveledShape([5, 7], 1, [0]), [5, 7]);
  assert.deepEqual(spec.raveledShape([5, 7, 3], 1, [2, 0]), [7, 15]);
  assert.deepEqual(spec.raveledShape([2, 3, 4, 5], 2, [0, 1, 3]), [4, 30]);
});

test("the block lists layouts in axis order with their index orders", () => {
  const block = spec.blockFor(
    [4, 5, 6],
    new Map([
      [2, { indexOrder: [1, 0] }],
      [0, { indexOrder: [1, 2] }],
    ]),
  );
  assert.deepEqual(block, {
    spec: "1",
    complete: true,
    shape: [4, 5, 6],
    layouts: [
      { path: "layouts/axis0", indexed_axis: 0, index_order: [1, 2] },
      { path: "layouts/axis2", indexed_axis: 2, index_order: [1, 0] },
    ],
  });
  // Key order is part of the written text: spec, complete, shape, layouts.
  assert.deepEqual(Object.keys(block), ["spec", "complete", "shape", "layouts"]);
});

/** The ```json fence following the spec-block marker in a markdown file. */
function specBlockOf(markdown: string): unknown {
  const marker = markdown.indexOf("<!-- spec-block");
  assert.ok(marker >= 0, "the document carries a spec-block marker");
  const fence = /```json\n([\s\S]*?)\n```/.exec(markdown.slice(marker));
  assert.ok(fence, "a ```json fence follows the marker");
  return JSON.parse(fence[1] as string);
}

for (const doc of ["docs/sporadik.md", "docs/spec/sporadik-1.md"]) {
  test(`the block example in ${doc} is what the spec module writes`, () => {
    const documented = specBlockOf(readFileSync(join(REPO, doc), "utf8")) as spec.Block;
    assert.ok(spec.SUPPORTED_SPECS.has(documented.spec));
    const orders = new Map(documented.layouts.map((l) => [l.indexed_axis, { indexOrder: l.index_order }]));
    assert.deepEqual(documented, spec.blockFor(documented.shape, orders));
    for (const layout of documented.layouts) assert.equal(layout.path, spec.layoutPath(layout.indexed_axis));
  });
}
