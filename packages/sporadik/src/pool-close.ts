/** What the Node pools of worker threads (encode, decode) share when they close. */

/**
 * Jobs still pending on workers about to be terminated, refused now rather than when each worker
 * exits: a reply that came in meanwhile would settle its job, and the last one would `unref()` the
 * worker, so an event loop with nothing else to do could end during `await pool.close()` (what
 * followed it never ran). Its reply now finds no job and does nothing.
 */
export function refusePending(
  slots: readonly { pending: Map<number, { reject: (error: Error) => void }> }[],
  error: () => Error,
): void {
  for (const slot of slots) {
    for (const job of slot.pending.values()) job.reject(error());
    slot.pending.clear();
  }
}
