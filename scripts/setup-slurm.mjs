#!/usr/bin/env node
// Installs the Slurm scheduler and its munge authentication (Debian's `slurm-wlm` and `munge`)
// that the scheduler tests start privately in a temporary folder (test-utils/slurm.ts): a
// one-node cluster on which array jobs run as they would on a real one. Only the programs are
// installed; no daemon is started or configured system-wide. Idempotent: when every program the
// harness runs is there it does nothing, so `npm test` can call it every time.
import { existsSync } from "node:fs";
import { aptInstall } from "./apt-install.mjs";

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
if (missing().length > 0) {
  aptInstall({ label: "slurm setup", what: "Slurm and munge", packages: ["slurm-wlm", "munge"], missing });
}
