/**
 * A counting semaphore, FIFO: what bounds a wrapper's calls in flight and a folder store's open
 * descriptors. A waiter whose signal aborts leaves the queue at once and rejects with the signal's
 * reason. Browser-safe.
 */
import { onAbort } from "./signals.js";

export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    this.free = limit;
  }

  /** Slots taken now. */
  get taken(): number {
    return this.limit - this.free;
  }

  /** Takers waiting in line. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Takes a slot if one is free, without waiting. */
  tryTake(): boolean {
    if (this.free === 0) return false;
    this.free--;
    return true;
  }

  /** Takes a slot, waiting in line if none is free. */
  take(signal?: AbortSignal): Promise<void> {
    if (this.tryTake()) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const start = () => {
        stop();
        resolve();
      };
      const stop = onAbort(signal, () => {
        const i = this.waiting.indexOf(start);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason);
      });
      this.waiting.push(start);
    });
  }

  /** Gives a slot back; the first waiter, if any, gets it directly. */
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
