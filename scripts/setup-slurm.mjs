#!/usr/bin/env node
// Installs the Slurm scheduler and its munge authentication (Debian's `slurm-wlm` and `munge`)
// that the scheduler tests start privately in a temporary folder (test-utils/slurm.ts): a
// one-node cluster on which array jobs run as they would on a real one. Only the programs are
// installed; no daemon is started or configured system-wide. Idempotent: when every program the
// harness runs is there it does nothing, so `npm test` can call it every time.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const programs = [
  "/usr/sbin/munged",
  "/usr/sbin/slurmctld",
  "/usr/sbin/slurmd",
  "/usr/bin/sbatch",
  "/usr/bin/squeue",
  "/usr/bin/scontrol",
  "/usr/bin/scancel",
  "/usr/bin/sinfo",
];
const missing = () => programs.filter((p) => !existsSync(p));
if (missing().length === 0) process.exit(0);

const packages = ["slurm-wlm", "munge"];
const steps = [
  ["apt-get", ["update"]],
  ["apt-get", ["install", "-y", "--no-install-recommends", ...packages]],
];
const manual = `apt-get update && apt-get install -y --no-install-recommends ${packages.join(" ")}`;

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
    `slurm setup: ${missing().join(", ")} missing and this user can neither install packages (not root) ` +
      `nor use passwordless sudo. Install Slurm and munge by hand as root: ${manual}`,
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
      `slurm setup failed: ${argv.join(" ")} exited with ${r.status ?? r.signal}. ` +
        `Install Slurm and munge by hand as root: ${manual}`,
    );
    process.exit(r.status ?? 1);
  }
}
if (missing().length > 0) {
  console.error(`slurm setup: apt-get finished but ${missing().join(", ")} still missing. Run: ${manual}`);
  process.exit(1);
}
console.error(
  `slurm setup: installed ${packages.join(" and ")} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
