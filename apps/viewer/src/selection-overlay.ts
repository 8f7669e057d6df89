/**
 * The selection drawn over the plot, on a 2D canvas of its own: only the selected cells, each a
 * dark square with a light centre at its screen position. regl-scatterplot draws its selection in
 * the same frame as every point, so a new selection redrew all of them: without a GPU
 * (SwiftShader, ~1 us a point) a million cells held the page's next frame, and everything shown
 * with it (the marker table), for about a second. This overlay costs a pass over the selected
 * cells only (10,000 cells: a few ms), on a selection, a move of the view or a resize.
 */
import type { ScreenMap } from "./nearest.js";

export interface SelectionOverlay {
  /** Draws these cells (sorted or not), replacing the previous ones. */
  set(cells: readonly number[]): void;
  /** The cells drawn. */
  readonly cells: readonly number[];
  /** Draws again in the next animation frame (the view moved, the plot was resized or cells were hidden). */
  redraw(): void;
  destroy(): void;
}

export function createSelectionOverlay(
  box: HTMLElement,
  coords: { x: Float32Array; y: Float32Array },
  view: {
    /** The plot's screen transform now, and its size in CSS pixels. */
    screenMap(): ScreenMap;
    size(): readonly number[];
    /** The size a point is drawn at now (CSS pixels). */
    pointSize(): number;
    /** Cells not drawn (hidden categories), or undefined. */
    hidden(): Uint8Array | undefined;
  },
): SelectionOverlay {
  const canvas = document.createElement("canvas");
  canvas.className = "selection-overlay";
  box.appendChild(canvas);
  const g = canvas.getContext("2d")!;
  let cells: readonly number[] = [];
  let frame = 0;

  function draw(): void {
    frame = 0;
    const [w, h] = view.size() as [number, number];
    const dpr = devicePixelRatio;
    if (canvas.width !== Math.floor(w * dpr) || canvas.height !== Math.floor(h * dpr)) {
      canvas.width = Math.floor(w * dpr);
      canvas.height = Math.floor(h * dpr);
      canvas.style.width = `${w}px`;
      canvas.style.height = `${h}px`;
    }
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    if (cells.length === 0) return;
    const m = view.screenMap();
    const hidden = view.hidden();
    const inner = Math.max(1, view.pointSize());
    const outer = inner + 2;
    // Two passes (all borders, then all centres), each one path: a fill per pass, not per cell.
    for (const [size, colour] of [
      [outer, "#111827"],
      [inner, "#fde68a"],
    ] as const) {
      g.beginPath();
      for (const c of cells) {
        if (hidden?.[c]) continue;
        const x = coords.x[c]!;
        const y = coords.y[c]!;
        const sx = m[0]! * x + m[1]! * y + m[2]!;
        const sy = m[3]! * x + m[4]! * y + m[5]!;
        if (sx < -outer || sy < -outer || sx > w + outer || sy > h + outer) continue;
        g.rect(sx - size / 2, sy - size / 2, size, size);
      }
      g.fillStyle = colour;
      g.fill();
    }
  }

  const redraw = () => {
    frame ||= requestAnimationFrame(draw);
  };
  return {
    set(next) {
      cells = next;
      redraw();
    },
    get cells() {
      return cells;
    },
    redraw,
    destroy() {
      if (frame) cancelAnimationFrame(frame);
      canvas.remove();
    },
  };
}
