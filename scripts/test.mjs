#!/usr/bin/env node
// The one test command (`npm test`): type-check, lint, then every test file under node's test
// runner, TypeScript loaded through tsx and workspace packages resolved to their sources.
// Pass paths to run a subset: `npm test -- packages/storage`.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const roots = process.argv.slice(2);
const full = roots.length === 0;

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

function run(cmd, args) {
  const result = spawnSync(cmd, args, { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (full) {
  run("npx", ["tsc", "-p", "tsconfig.check.json"]);
  run("npx", ["biome", "check", "."]);
}
const files = (full ? ["packages", "apps", "conformance"] : roots).flatMap((r) =>
  statSync(r).isDirectory() ? testFiles(r) : [r],
);
if (files.length === 0) {
  console.error(`no test files under ${roots.join(", ")}`);
  process.exit(1);
}
run(process.execPath, ["--import", "tsx", "--conditions=source", "--test", ...files]);
