/**
 * The README's command in this checkout: `npx deltacells` runs the workspace's command, linked into
 * node_modules/.bin by `npm ci` because the root depends on @deltacells/cli. Offline, so that a
 * missing link fails here instead of fetching whatever the registry holds under that name.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { REPO, run } from "./cli-helpers.js";

test("`npx deltacells --help` and `--version` from the repository root run this checkout's command", async () => {
  const offline = { npm_config_offline: "true", npm_config_yes: "false" };
  const help = await run("npx", ["deltacells", "--help"], offline);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: deltacells COMMAND/);
  const version = await run("npx", ["deltacells", "--version"], offline);
  const { version: expected } = JSON.parse(readFileSync(join(REPO, "packages/cli/package.json"), "utf8"));
  assert.equal(version.stdout, `deltacells ${expected}\n`);
});
