/**
 * A view of a store under `prefix/`: where a conversion stages the new dataset or store, and an
 * append the objects it replaces or adds.
 */
import type { RangeQuery, Store, StoreOptions } from "@deltacells/storage";

export class PrefixStore implements Store {
  readonly url: string;
  constructor(
    readonly inner: Store,
    readonly prefix: string,
  ) {
    this.url = `${inner.url.replace(/\/+$/, "")}/${prefix}`;
  }
  private key(k: string): string {
    return `${this.prefix}/${k.startsWith("/") ? k.slice(1) : k}`;
  }
  get(key: string, opts?: StoreOptions) {
    return this.inner.get(this.key(key), opts);
  }
  getRange(key: string, range: RangeQuery, opts?: StoreOptions) {
    return this.inner.getRange(this.key(key), range, opts);
  }
  set(key: string, value: Uint8Array, opts?: StoreOptions) {
    return this.inner.set(this.key(key), value, opts);
  }
  delete(key: string, opts?: StoreOptions) {
    return this.inner.delete(this.key(key), opts);
  }
  async list(prefix = "", opts?: StoreOptions) {
    const p = prefix.startsWith("/") ? prefix.slice(1) : prefix;
    const keys = await this.inner.list(`${this.prefix}/${p}`, opts);
    return keys.map((k) => k.slice(this.prefix.length + 1));
  }
}
