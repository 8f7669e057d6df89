#!/usr/bin/env node
// Installs the Chromium that the real-browser tests (packages/*/test/*.browser.test.ts) drive
// through playwright-core. Idempotent: when /usr/bin/chromium exists it does nothing, so
// `npm test` can call it every time. We use the Debian package rather than Playwright's own
// browser download so that CI needs nothing beyond apt.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const chromium = "/usr/bin/chromium";
if (existsSync(chromium)) process.exit(0);

const steps = [
  ["apt-get", ["update"]],
  ["apt-get", ["install", "-y", "--no-install-recommends", "chromium"]],
];
const manual = "apt-get update && apt-get install -y --no-install-recommends chromium";

function canSudo() {
  const r = spawnSync("sudo", ["-n", "true"], { stdio: "ignore" });
  return r.status === 0;
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
let prefix;
if (isRoot) prefix = [];
else if (canSudo()) prefix = ["sudo", "-n"];
else {
  console.error(
    `browser setup: ${chromium} is missing and this user can neither install packages (not root) ` +
      `nor use passwordless sudo. Install Chromium by hand as root: ${manual}`,
  );
  process.exit(1);
}

const started = Date.now();
for (const [cmd, args] of steps) {
  const argv = [...prefix, cmd, ...args];
  console.error(`$ ${argv.join(" ")}`);
  const r = spawnSync(argv[0], argv.slice(1), {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (r.status !== 0) {
    console.error(
      `browser setup failed: ${argv.join(" ")} exited with ${r.status ?? r.signal}. ` +
        `Install Chromium by hand as root: ${manual}`,
    );
    process.exit(r.status ?? 1);
  }
}
if (!existsSync(chromium)) {
  console.error(`browser setup: apt-get finished but ${chromium} is still missing. Run: ${manual}`);
  process.exit(1);
}
console.error(`browser setup: installed ${chromium} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
