/**
 * The cell nearest to the pointer without a pass over every cell: a uniform grid of squares over
 * the cells' positions (the embedding, in the plot's data coordinates), built once per dataset. A
 * pick maps the pointer's disk into data coordinates and measures only the cells of the squares
 * its bounding box covers, in screen pixels, as a scan over every cell would. regl-scatterplot has
 * a spatial index of its own (KDBush) but does not expose its queries: only its raw buffer. The
 * same grid answers a lasso: the cells inside its polygon, from the squares its bounding box covers.
 */

/**
 * Screen position of data point (x, y): `[ax * x + bx * y + ox, ay * x + by * y + oy]`, stored as
 * `[ax, bx, ox, ay, by, oy]` (the plot's camera and size as one affine map).
 */
export type ScreenMap = Float64Array;

/** Cells a square holds on average: fewer squares cost memory, more cost empty squares per pick. */
const PER_SQUARE = 4;

export class CellGrid {
  private constructor(
    private readonly x: Float32Array,
    private readonly y: Float32Array,
    private readonly x0: number,
    private readonly y0: number,
    /** Squares per data unit along x and y (0 along an axis the cells do not spread on). */
    private readonly kx: number,
    private readonly ky: number,
    private readonly cols: number,
    private readonly rows: number,
    /** The cells of square `s` are `ids[start[s]..start[s + 1]]`, in increasing order. */
    private readonly start: Int32Array,
    private readonly ids: Int32Array,
  ) {}

  /** The grid of the cells at (`x[i]`, `y[i]`); cells without finite coordinates are never picked. */
  static build(x: Float32Array, y: Float32Array): CellGrid {
    const n = x.length;
    let x0 = Infinity;
    let x1 = -Infinity;
    let y0 = Infinity;
    let y1 = -Infinity;
    let placed = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[i]!;
      const yi = y[i]!;
      if (!Number.isFinite(xi) || !Number.isFinite(yi)) continue;
      placed++;
      if (xi < x0) x0 = xi;
      if (xi > x1) x1 = xi;
      if (yi < y0) y0 = yi;
      if (yi > y1) y1 = yi;
    }
    const w = placed > 0 ? x1 - x0 : 0;
    const h = placed > 0 ? y1 - y0 : 0;
    // About PER_SQUARE cells a square, squares as near square as the extent allows (one row for
    // cells on a line, one square for cells on a point).
    const target = Math.max(1, Math.ceil(placed / PER_SQUARE));
    const cols =
      w > 0 ? Math.min(target, Math.max(1, Math.round(h > 0 ? Math.sqrt((target * w) / h) : target))) : 1;
    const rows = h > 0 ? Math.min(target, Math.max(1, Math.round(target / cols))) : 1;
    const kx = w > 0 ? cols / w : 0;
    const ky = h > 0 ? rows / h : 0;
    const square = (i: number) => {
      const c = Math.min(cols - 1, Math.floor((x[i]! - x0) * kx));
      return Math.min(rows - 1, Math.floor((y[i]! - y0) * ky)) * cols + c;
    };
    // Counting sort of the cells by square: the counts, their prefix sums, then the cells in order.
    const start = new Int32Array(cols * rows + 1);
    const finite = (i: number) => Number.isFinite(x[i]!) && Number.isFinite(y[i]!);
    for (let i = 0; i < n; i++) if (finite(i)) start[square(i) + 1]!++;
    for (let s = 0; s < cols * rows; s++) start[s + 1]! += start[s]!;
    const ids = new Int32Array(placed);
    const next = start.slice(0, cols * rows);
    for (let i = 0; i < n; i++) if (finite(i)) ids[next[square(i)]!++] = i;
    return new CellGrid(x, y, x0, y0, kx, ky, cols, rows, start, ids);
  }

  /**
   * The cell whose screen position under `m` is nearest to (`px`, `py`) and less than `radius`
   * pixels from it, the lowest-numbered of those equally near; -1 for none. The same answer as
   * measuring every cell, from the cells of the squares the pointer's disk can reach. Cells that
   * `skip` marks (1: hidden) are never the answer.
   */
  nearest(m: ScreenMap, px: number, py: number, radius: number, skip?: Uint8Array): number {
    // Plain locals, not destructured arrays: a pick runs on every pointer frame.
    const ax = m[0]!;
    const bx = m[1]!;
    const ox = m[2]!;
    const ay = m[3]!;
    const by = m[4]!;
    const oy = m[5]!;
    const det = ax * by - bx * ay;
    let c0 = 0;
    let c1 = this.cols - 1;
    let r0 = 0;
    let r1 = this.rows - 1;
    if (det !== 0 && Number.isFinite(det)) {
      // The pointer in data coordinates, and the half-sides of the box around the disk's image
      // there (an ellipse), with a little slack for rounding at its edge.
      const qx = px - ox;
      const qy = py - oy;
      const dx = (by * qx - bx * qy) / det;
      const dy = (ax * qy - ay * qx) / det;
      const hx = ((radius * Math.sqrt(by * by + bx * bx)) / Math.abs(det)) * (1 + 1e-6) + 1e-9;
      const hy = ((radius * Math.sqrt(ay * ay + ax * ax)) / Math.abs(det)) * (1 + 1e-6) + 1e-9;
      c0 = Math.max(c0, Math.floor((dx - hx - this.x0) * this.kx));
      c1 = Math.min(c1, Math.floor((dx + hx - this.x0) * this.kx));
      r0 = Math.max(r0, Math.floor((dy - hy - this.y0) * this.ky));
      r1 = Math.min(r1, Math.floor((dy + hy - this.y0) * this.ky));
      // A box wholly before the extent along an axis the cells do not spread on reaches none.
      if (this.kx === 0 && (dx + hx < this.x0 || dx - hx > this.x0)) return -1;
      if (this.ky === 0 && (dy + hy < this.y0 || dy - hy > this.y0)) return -1;
    }
    const { x, y, ids, start, cols } = this;
    let best = radius * radius;
    let found = -1;
    for (let r = r0; r <= r1; r++) {
      for (let s = r * cols + c0, end = r * cols + c1; s <= end; s++) {
        for (let k = start[s]!; k < start[s + 1]!; k++) {
          const i = ids[k]!;
          if (skip?.[i]) continue;
          const ex = ax * x[i]! + bx * y[i]! + ox - px;
          if (ex > radius || ex < -radius) continue;
          const ey = ay * x[i]! + by * y[i]! + oy - py;
          const d = ex * ex + ey * ey;
          if (d < best || (d === best && i < found)) {
            best = d;
            found = i;
          }
        }
      }
    }
    return found;
  }

  /**
   * The cells inside the closed polygon `flat` (`[x0, y0, x1, y1, ...]` in data coordinates), in
   * increasing order, except those `skip` marks: regl-scatterplot's own lasso test (its bounding
   * box, inclusive, then a winding number that is not zero), on the cells of the squares the box
   * covers instead of its KDBush's range, so the same cells. None for a polygon whose box is empty.
   */
  inPolygon(flat: ArrayLike<number>, skip?: Uint8Array): number[] {
    let xMin = Infinity;
    let xMax = -Infinity;
    let yMin = Infinity;
    let yMax = -Infinity;
    for (let k = 0; k + 1 < flat.length; k += 2) {
      xMin = Math.min(xMin, flat[k]!);
      xMax = Math.max(xMax, flat[k]!);
      yMin = Math.min(yMin, flat[k + 1]!);
      yMax = Math.max(yMax, flat[k + 1]!);
    }
    if (!(Number.isFinite(xMin + xMax + yMin + yMax) && xMax > xMin && yMax > yMin)) return [];
    // Squares are monotonic in the coordinate, so those of the box's corners bound every cell in it.
    const clampC = (v: number) => Math.max(0, Math.min(this.cols - 1, Math.floor((v - this.x0) * this.kx)));
    const clampR = (v: number) => Math.max(0, Math.min(this.rows - 1, Math.floor((v - this.y0) * this.ky)));
    const [c0, c1, r0, r1] = [clampC(xMin), clampC(xMax), clampR(yMin), clampR(yMax)];
    const { x, y, ids, start, cols } = this;
    const found: number[] = [];
    for (let r = r0; r <= r1; r++) {
      for (let s = r * cols + c0, end = r * cols + c1; s <= end; s++) {
        for (let k = start[s]!; k < start[s + 1]!; k++) {
          const i = ids[k]!;
          const px = x[i]!;
          const py = y[i]!;
          if (skip?.[i] || px < xMin || px > xMax || py < yMin || py > yMax) continue;
          if (winding(flat, px, py) !== 0) found.push(i);
        }
      }
    }
    return found.sort((a, b) => a - b);
  }
}

/** The winding number of `flat` about (px, py), as regl-scatterplot's `isPointInPolygon` counts it. */
function winding(flat: ArrayLike<number>, px: number, py: number): number {
  let w = 0;
  for (let i = 0, j = flat.length - 2; i < flat.length; i += 2) {
    const x1 = flat[i]!;
    const y1 = flat[i + 1]!;
    const x2 = flat[j]!;
    const y2 = flat[j + 1]!;
    const cross = (x2 - x1) * (py - y1) - (px - x1) * (y2 - y1);
    if (y1 <= py) {
      if (y2 > py && cross > 0) w++;
    } else if (y2 <= py && cross < 0) w--;
    j = i;
  }
  return w;
}

/**
 * The size a point is drawn at, in CSS pixels, for a `pointSize` at the camera's `scaling`:
 * regl-scatterplot's default point scale ("asinh": points grow slowly as the view zooms in, and
 * shrink with it as it zooms out, to 1 px at the least).
 */
export function drawnPointSize(pointSize: number, scaling: number): number {
  const scale = scaling > 1 ? Math.asinh(scaling) / Math.asinh(1) : Math.max(1 / pointSize, scaling);
  return pointSize * scale;
}
