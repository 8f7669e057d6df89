/**
 * Where a batch's time goes, for one configuration of the sporadik benchmark (ours only): wall
 * time per batch, split into the time the store had a request in flight ("I/O wall"), the time
 * spent in zstd decode (summed), and the rest (bookkeeping, copying, awaiting). Run under
 * `node --cpu-prof` for the function-level picture.
 *
 * By default the reader is what a Node user gets, `openReader` from `@deltacells/sporadik/node`
 * (native zstd into reused buffers); its decoder is timed by passing the same `nativeZstd` back
 * through `decompressors` with a clock around it. `--browser` reads through the browser-safe
 * `@deltacells/sporadik` (WebAssembly zstd from zarrita's registry), whose decode is not split out
 * (use `--cpu-prof`).
 *
 *   node --import tsx --conditions=source bench/sporadik/breakdown.ts [--layout chunked|ranged]
 *     [--axis 0|1] [--size 100] [--reps 30] [--browser]
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { openReader as openBrowser, type ReadableStore } from "@deltacells/sporadik";
import { nativeZstd, openReader as openNode } from "@deltacells/sporadik/node";
import { FolderStore } from "@deltacells/storage/node";

const { values: args } = parseArgs({
  options: {
    store: {
      type: "string",
      default: fileURLToPath(new URL("../out/sporadik/c100000-g20000-k1000-s0", import.meta.url)),
    },
    layout: { type: "string", default: "chunked" },
    axis: { type: "string", default: "0" },
    size: { type: "string", default: "100" },
    reps: { type: "string", default: "30" },
    browser: { type: "boolean", default: false },
  },
});

let decodeMs = 0;
const timedZstd: typeof nativeZstd = (stored, into, configuration) => {
  const t0 = performance.now();
  const written = nativeZstd(stored, into, configuration) as number;
  decodeMs += performance.now() - t0;
  return written;
};

/** Measures the wall time during which at least one request is in flight. */
class IoClock implements ReadableStore {
  busyMs = 0;
  requests = 0;
  #inFlight = 0;
  #since = 0;
  constructor(readonly inner: FolderStore) {}
  async #track<T>(call: () => Promise<T>): Promise<T> {
    this.requests++;
    if (this.#inFlight++ === 0) this.#since = performance.now();
    try {
      return await call();
    } finally {
      if (--this.#inFlight === 0) this.busyMs += performance.now() - this.#since;
    }
  }
  get(key: string) {
    return this.#track(() => this.inner.get(key));
  }
  getRange(key: string, range: { offset: number; length: number } | { suffixLength: number }) {
    return this.#track(() => this.inner.getRange(key, range));
  }
}

const axis = Number(args.axis);
const size = Number(args.size);
const store = new IoClock(
  new FolderStore(join(args.store, args.layout === "chunked" ? "chunked.zarr" : "ranged.zarr"), {
    blockingReads: true,
  }),
);
const reader = args.browser
  ? await openBrowser(store, { axis })
  : await openNode(store, { axis, decompressors: { zstd: timedZstd } });
const n = reader.info.slices;
let seed = 12345;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
await reader.slicesAt(Array.from({ length: 64 }, (_, k) => Math.floor((k * n) / 64)));
const rows: { wall: number; io: number; decode: number; requests: number }[] = [];
for (let rep = 0; rep < Number(args.reps); rep++) {
  const positions = Array.from({ length: size }, () => Math.floor(random() * n));
  store.busyMs = 0;
  store.requests = 0;
  decodeMs = 0;
  const t0 = performance.now();
  await reader.slicesAt(positions);
  rows.push({ wall: performance.now() - t0, io: store.busyMs, decode: decodeMs, requests: store.requests });
}
const med = (key: keyof (typeof rows)[number]) => {
  const s = rows.map((r) => r[key]).sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};
console.log(
  `${args.layout} axis ${axis} batch ${size} (${args.browser ? "browser path, WASM zstd" : "Node entry, native zstd"}): median wall ${med("wall").toFixed(1)} ms, I/O wall ${med("io").toFixed(1)} ms, decode ${args.browser ? "not split out" : `${med("decode").toFixed(1)} ms (summed)`}, ${med("requests")} requests`,
);
