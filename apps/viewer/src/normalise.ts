/**
 * The embedding as the plot holds it, in a module of its own (no regl-scatterplot): the page and
 * bench/viewer-pick.ts, which runs in Node, place the cells the same way.
 */

/** Scales both axes by the larger extent, so the embedding keeps its aspect ratio. */
export function normalise(x: Float32Array, y: Float32Array): { x: Float32Array; y: Float32Array } {
  let [x0, x1, y0, y1] = [Infinity, -Infinity, Infinity, -Infinity];
  for (let i = 0; i < x.length; i++) {
    if (Number.isFinite(x[i]!) && Number.isFinite(y[i]!)) {
      x0 = Math.min(x0, x[i]!);
      x1 = Math.max(x1, x[i]!);
      y0 = Math.min(y0, y[i]!);
      y1 = Math.max(y1, y[i]!);
    }
  }
  const half = Math.max(x1 - x0, y1 - y0, 1e-12) / 2 / 0.95;
  const [cx, cy] = [(x0 + x1) / 2, (y0 + y1) / 2];
  const nx = new Float32Array(x.length);
  const ny = new Float32Array(y.length);
  for (let i = 0; i < x.length; i++) {
    // Cells without coordinates are parked outside the view rather than dropped (indices stay cells).
    nx[i] = Number.isFinite(x[i]!) ? (x[i]! - cx) / half : 10;
    ny[i] = Number.isFinite(y[i]!) ? (y[i]! - cy) / half : 10;
  }
  return { x: nx, y: ny };
}
