/**
 * Every package's `./node` entry is a superset of its browser-safe `.`: a Node program imports one
 * entry and has everything (some names, like storage's `openStore`, are replaced by a Node version).
 */
import assert from "node:assert/strict";
import { test } from "node:test";

const PACKAGES = ["@deltacells/storage", "@deltacells/core", "@deltacells/sporadik", "@deltacells/anndata"];

for (const pkg of PACKAGES) {
  test(`${pkg}/node exports every name ${pkg} does`, async () => {
    const browser = Object.keys(await import(pkg));
    const node = new Set(Object.keys(await import(`${pkg}/node`)));
    assert.ok(browser.length > 0, `${pkg} exports nothing`);
    assert.deepEqual(
      browser.filter((name) => !node.has(name)),
      [],
    );
  });
}
