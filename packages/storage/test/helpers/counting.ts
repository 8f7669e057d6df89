// An instrumented in-memory store for wrapper tests: it records every call and how many were
// in flight at once, and can be made slow, held or failing.
import { MemoryStore, type RangeQuery, type StoreOptions } from "@deltacells/storage";

export class ProbeStore extends MemoryStore {
  readonly calls: { op: string; key: string; range?: RangeQuery }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Milliseconds each read takes. */
  delayMs = 0;
  /** Errors thrown by the next reads, in order. */
  failures: unknown[] = [];
  /** While set, reads wait for it before answering: a test releases them once it saw what it needs. */
  gate: Promise<void> | undefined;

  private async enter<T>(
    op: string,
    key: string,
    range: RangeQuery | undefined,
    run: () => Promise<T>,
    opts?: StoreOptions,
  ) {
    this.calls.push(range === undefined ? { op, key } : { op, key, range });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.delayMs > 0) {
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, this.delayMs);
          opts?.signal?.addEventListener("abort", () => {
            clearTimeout(t);
            reject(opts.signal?.reason);
          });
        });
      }
      if (this.gate) await this.gate;
      const failure = this.failures.shift();
      if (failure !== undefined) throw failure;
      return await run();
    } finally {
      this.inFlight--;
    }
  }

  override get(key: string, opts?: StoreOptions) {
    return this.enter("get", key, undefined, () => super.get(key, opts), opts);
  }

  override getRange(key: string, range: RangeQuery, opts?: StoreOptions) {
    return this.enter("getRange", key, range, () => super.getRange(key, range, opts), opts);
  }
}
