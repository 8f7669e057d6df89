/**
 * The order of the rows in embedding order, computed off the page's main thread: a Hilbert key
 * per cell and one sort take seconds at millions of cells, during which the page would not
 * answer. Given the embedding's two float32 columns (moved here), answers each cell's row and the
 * order's digest (both moved back).
 */
import { embeddingOrder, orderDigest, rowsOf } from "@deltacells/core";

self.onmessage = (event: MessageEvent<{ x: Float32Array; y: Float32Array }>) => {
  const started = performance.now();
  const order = embeddingOrder(event.data.x, event.data.y);
  const digest = orderDigest(order);
  const rows = rowsOf(order);
  (self as unknown as Worker).postMessage({ rows, digest, ms: performance.now() - started }, [rows.buffer]);
};
