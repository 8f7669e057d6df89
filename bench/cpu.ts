/**
 * This thread's scheduler figures, for benchmarks that want CPU time rather than the wall clock
 * (steadier on a shared machine): seconds on a CPU and seconds runnable but waiting for one, from
 * Linux's /proc/thread-self/schedstat; NaN elsewhere.
 */
import { readFileSync } from "node:fs";

export function threadSched(): { cpu: number; queued: number } {
  try {
    const [cpuNs, queuedNs] = readFileSync("/proc/thread-self/schedstat", "utf8").split(" ").map(Number);
    return { cpu: (cpuNs as number) / 1e9, queued: (queuedNs as number) / 1e9 };
  } catch {
    return { cpu: Number.NaN, queued: Number.NaN };
  }
}
