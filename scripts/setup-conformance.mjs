#!/usr/bin/env node
// Creates the Python conformance environment (conformance/.venv) from the pinned
// conformance/requirements.txt. Idempotent: a stamp holding the requirements' hash skips the work
// when nothing changed, so `npm test` can call it every time.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const venv = "conformance/.venv";
const requirements = "conformance/requirements.txt";
const stamp = `${venv}/.requirements.sha256`;
const want = createHash("sha256").update(readFileSync(requirements)).digest("hex");

if (existsSync(stamp) && readFileSync(stamp, "utf8") === want) process.exit(0);

function run(cmd, args) {
  console.error(`$ ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`conformance setup failed: ${cmd} exited with ${r.status}`);
    process.exit(r.status ?? 1);
  }
}
if (!existsSync(`${venv}/bin/python`)) run("python3", ["-m", "venv", venv]);
run(`${venv}/bin/pip`, ["install", "--quiet", "--disable-pip-version-check", "-r", requirements]);
writeFileSync(stamp, want);
