/**
 * How long this thread has waited for a core: what tells a blocking read that waited for the disk
 * from one that was only descheduled (see FolderStore's `blockingReads`). On 2 cores with two
 * decoding workers the calling thread is descheduled often, and a 0.14 ms page-cache read of a
 * tile then takes over 0.84 ms by the wall clock now and then: four in a row switched the store to
 * the thread pool for 5 s, and `ds.tiles()` with threads ran slower meanwhile.
 */
import { readFileSync } from "node:fs";

/**
 * This thread's total time runnable but not running, in ms (Linux: the second field of
 * /proc/thread-self/schedstat, "run_ns wait_ns timeslices"); undefined where the system does not
 * say. About 10 us a call (open, read, close: no descriptor is kept), read only while a run of
 * slow reads is being counted.
 */
function readCoreWaitMs(): number | undefined {
  let line: string;
  try {
    line = readFileSync("/proc/thread-self/schedstat", "latin1");
  } catch {
    return undefined;
  }
  const ns = Number(line.split(" ")[1]);
  return Number.isFinite(ns) ? ns / 1e6 : undefined;
}

/** The clock FolderStore reads (an object, so that a test can stand in for the scheduler). */
export const coreWait = { ms: readCoreWaitMs };
