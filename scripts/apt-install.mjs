// Installs Debian packages the tests need with apt-get, as root or through passwordless sudo:
// the shared part of scripts/setup-browser.mjs and scripts/setup-slurm.mjs. Each calls it only
// when a program of the packages is missing, so a machine that has them pays nothing.
import { spawnSync } from "node:child_process";

function canSudo() {
  const r = spawnSync("sudo", ["-n", "true"], { stdio: "ignore" });
  return r.status === 0;
}

/**
 * Runs `apt-get update` and `apt-get install -y --no-install-recommends PACKAGES`, then checks that
 * `missing()` (the paths still absent) is empty. `label` starts each message (`slurm setup: ...`),
 * `what` names the software in them (`Slurm and munge`). Exits the process with a message saying
 * what to run by hand when it cannot install or the install fails.
 */
export function aptInstall({ label, what, packages, missing }) {
  const manual = `apt-get update && apt-get install -y --no-install-recommends ${packages.join(" ")}`;
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  let prefix;
  if (isRoot) prefix = [];
  else if (canSudo()) prefix = ["sudo", "-n"];
  else {
    console.error(
      `${label}: ${missing().join(", ")} not found, and this user can neither install packages (not root) ` +
        `nor use passwordless sudo. Install ${what} by hand as root: ${manual}`,
    );
    process.exit(1);
  }
  const started = Date.now();
  const steps = [
    ["apt-get", ["update"]],
    ["apt-get", ["install", "-y", "--no-install-recommends", ...packages]],
  ];
  for (const [cmd, args] of steps) {
    const argv = [...prefix, cmd, ...args];
    console.error(`$ ${argv.join(" ")}`);
    const r = spawnSync(argv[0], argv.slice(1), {
      stdio: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
    if (r.status !== 0) {
      console.error(
        `${label} failed: ${argv.join(" ")} exited with ${r.status ?? r.signal}. ` +
          `Install ${what} by hand as root: ${manual}`,
      );
      process.exit(r.status ?? 1);
    }
  }
  const left = missing();
  if (left.length > 0) {
    console.error(`${label}: apt-get finished but ${left.join(", ")} still not found. Run: ${manual}`);
    process.exit(1);
  }
  console.error(
    `${label}: installed ${packages.join(", ")} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}
