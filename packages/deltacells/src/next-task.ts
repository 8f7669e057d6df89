/**
 * A later task of the event loop (a macrotask, not a microtask): after the pending promise
 * callbacks and the I/O callbacks the loop has waiting. setImmediate under Node; elsewhere a
 * message, a task too, without setTimeout's 4 ms clamp.
 */

/** Runs `f` in a later task. */
export function nextTask(f: () => void): void {
  const immediate = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
  if (immediate !== undefined) {
    immediate(f);
    return;
  }
  const channel = new MessageChannel();
  channel.port1.onmessage = () => {
    channel.port1.close();
    f();
  };
  channel.port2.postMessage(undefined);
}

/** Resolves in a later task: once the event loop has run its pending I/O callbacks. */
export function ioTurn(): Promise<void> {
  return new Promise((resolve) => nextTask(resolve));
}
