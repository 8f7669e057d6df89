/** Whether a process of this host still runs, for the lock files of writers and caches. Node-only. */
import { readFileSync } from "node:fs";

/**
 * Whether process `pid` of this host is running. A process killed but not yet reaped by its parent
 * (a zombie: a container whose first process reaps no orphans keeps them for a while) still
 * answers a signal 0; it runs nothing and holds no lock, so it counts as gone. A process of
 * another user (EPERM) counts as running.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  return !zombie(pid);
}

/** Linux's process state in /proc/PID/stat (the field after the command's parenthesised name). */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat[stat.lastIndexOf(")") + 2] === "Z";
  } catch {
    // No /proc (macOS), or the process ended meanwhile: signal 0's answer stands.
    return false;
  }
}
