/**
 * Counting the waves of reads a command makes, for `--stats`. A wave is a stretch of time with at
 * least one request in flight; waves are separated by moments with none. A batch read that computes
 * its second requests from the first ones' bytes therefore shows as exactly two waves.
 */
import type { RangeQuery, ReadableStore, StatsStore, StoreOptions } from "@deltacells/storage";

/** A read-only view of `inner` that counts waves of requests. */
export class WaveCounter implements ReadableStore {
  #inFlight = 0;
  #waves = 0;

  constructor(readonly inner: StatsStore) {}

  /** Waves since creation or the last {@link WaveCounter.reset}. */
  get waves(): number {
    return this.#waves;
  }

  reset(): void {
    this.#waves = 0;
  }

  async #track<T>(request: () => Promise<T>): Promise<T> {
    if (this.#inFlight === 0) this.#waves++;
    this.#inFlight++;
    try {
      return await request();
    } finally {
      this.#inFlight--;
    }
  }

  get(key: string, options?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.#track(() => this.inner.get(key, options));
  }

  getRange(key: string, range: RangeQuery, options?: StoreOptions): Promise<Uint8Array | undefined> {
    return this.#track(() => this.inner.getRange(key, range, options));
  }
}
