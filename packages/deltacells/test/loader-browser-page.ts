/**
 * The page side of loader.browser.test.ts: `createLoader` in the browser build of
 * `@deltacells/core`, over HTTP (the dataset served by the test server), decoding on a pool of Web
 * Workers. Every export returns JSON.
 */
import { createLoader, type LoaderOptions, openDataset } from "@deltacells/core";
import { caught, type ErrorInfo, plain } from "../../../test-utils/browser/page-helpers.js";

/** One batch as JSON. */
export interface PageBatch {
  index: number;
  cells: number[];
  padded: number;
  indptr: number[];
  indices: number[];
  data: number[];
  codes: number[];
}

/** An epoch in the page, and the workers the pool started. */
export interface PageEpoch {
  batches: PageBatch[];
  workers: string[];
  state: unknown;
}

/** Every batch of one epoch of a loader with `threads` Web Workers over the dataset at `url`. */
export async function loaderEpoch(url: string, opts: LoaderOptions): Promise<PageEpoch> {
  const workers: string[] = [];
  const Original = globalThis.Worker;
  globalThis.Worker = class extends Original {
    constructor(src: string | URL, o?: WorkerOptions) {
      super(src, o);
      workers.push(String(src));
    }
  };
  try {
    const ds = await openDataset(url);
    const loader = await createLoader(ds, { ...opts, output: "csr" });
    const batches: PageBatch[] = [];
    try {
      for await (const b of loader) {
        const ct = b.obs["cell type/ü"];
        batches.push({
          index: b.index,
          cells: plain(b.cells),
          padded: b.padded,
          indptr: plain(b.indptr),
          indices: plain(b.indices),
          data: plain(b.data),
          codes: ct?.kind === "category" ? plain(ct.codes) : [],
        });
        b.release();
      }
    } finally {
      await loader.close();
    }
    return { batches, workers, state: loader.state() };
  } finally {
    globalThis.Worker = Original;
  }
}

/** The error a loader over `url` stops with. */
export async function loaderError(url: string, opts: LoaderOptions): Promise<ErrorInfo> {
  return caught(() => loaderEpoch(url, opts));
}
