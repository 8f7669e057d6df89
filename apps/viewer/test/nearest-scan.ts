/**
 * The nearest cell by a pass over every cell: what the viewer's hover did before its grid
 * (src/nearest.ts), the reference its test and bench/viewer-pick.ts measure the grid against.
 */
import type { ScreenMap } from "../src/nearest.js";

/** The nearest cell within `radius` px of (`px`, `py`) under `m`; the lowest index among ties, -1 for none. */
export function scanNearest(
  x: Float32Array,
  y: Float32Array,
  m: ScreenMap,
  px: number,
  py: number,
  radius: number,
): number {
  const [ax, bx, ox, ay, by, oy] = m as unknown as [number, number, number, number, number, number];
  let best = radius * radius;
  let found = -1;
  for (let i = 0; i < x.length; i++) {
    const dx = ax * x[i]! + bx * y[i]! + ox - px;
    if (dx > radius || dx < -radius) continue;
    const dy = ay * x[i]! + by * y[i]! + oy - py;
    const d = dx * dx + dy * dy;
    if (d < best) {
      best = d;
      found = i;
    }
  }
  return found;
}
