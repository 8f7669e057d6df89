/**
 * The embedding as a WebGL scatter (regl-scatterplot: pan, zoom, hover, click, shift-drag lasso,
 * millions of points). Positions are set once; colouring only replaces the per-point values and
 * reuses the spatial index, so a new gene redraws without rebuilding anything.
 */
import createScatterplot, { createRenderer } from "regl-scatterplot";
import { categoryColours, viridis } from "./colors.js";

export type Colouring =
  | { kind: "continuous"; values: Float32Array; max: number }
  | { kind: "category"; codes: Int32Array; nCategories: number }
  | { kind: "none" };

export interface Scatter {
  setColouring(c: Colouring): Promise<void>;
  /** Selects cells as a click or lasso would (the test drives clicks through screen positions). */
  select(cells: number[]): void;
  screenPosition(cell: number): [number, number] | undefined;
  /**
   * No colouring is being drawn and the plot has the size of its box (no resize pending): screen
   * positions are final and a click reaches the points (regl-scatterplot ignores the mouse while
   * it replaces the points).
   */
  settled(): boolean;
  destroy(): void;
}

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

export function createScatter(
  canvas: HTMLCanvasElement,
  coords: { x: Float32Array; y: Float32Array },
  on: { hover(cell: number | undefined): void; select(cells: number[]): void; drawn?(): void },
): Scatter {
  // Sized from the container: regl-scatterplot pins the canvas's own CSS size, so the canvas
  // cannot tell when the legend below it grows.
  const box = canvas.parentElement ?? canvas;
  const { width, height } = box.getBoundingClientRect();
  const n = coords.x.length;
  // The WebGL canvas the points are drawn on, then copied to `canvas`, is made the plot's size.
  // regl-scatterplot's own is the window's size, and every frame clears, resolves (a gamma pass
  // over a float framebuffer) and copies all of its pixels: without a GPU (SwiftShader) that
  // fixed cost was most of a frame at small sizes (bench/viewer-interaction.ts).
  const glCanvas = document.createElement("canvas");
  glCanvas.width = Math.floor(width * devicePixelRatio);
  glCanvas.height = Math.floor(height * devicePixelRatio);
  const renderer = createRenderer({ canvas: glCanvas });
  const plot = createScatterplot({
    renderer,
    canvas,
    width,
    height,
    pointSize: n > 100_000 ? 1.5 : n > 10_000 ? 3 : 5,
    pointSizeSelected: 2,
    pointColor: "#4a78b5",
    backgroundColor: "#ffffff",
    lassoColor: "#333333",
    opacity: n > 100_000 ? 0.6 : 0.9,
    // Square points without alpha blending: regl-scatterplot's mode for millions of points.
    performanceMode: n > 200_000,
  });
  plot.subscribe("pointOver", (i: number) => on.hover(i));
  plot.subscribe("pointOut", () => on.hover(undefined));
  plot.subscribe("select", ({ points }: { points: number[] }) => on.select([...points]));
  plot.subscribe("deselect", () => on.select([]));
  plot.subscribe("draw", () => on.drawn?.());
  const valueA = new Float32Array(n);
  const valueB = new Float32Array(n);
  // Colourings are drawn one after the other (regl-scatterplot refuses a draw while one runs).
  /** Draws (the first one and colourings) and resizes not yet applied. */
  let pending = 1;
  let drawn = plot.draw({ x: coords.x, y: coords.y, valueA, valueB }).finally(() => pending--);
  let spatialIndex: ArrayBuffer | undefined;
  let size = [width, height];

  const resize = new ResizeObserver(() => {
    const r = box.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return;
    size = [r.width, r.height];
    // The renderer first: the plot copies the centre of the renderer's canvas, which must cover it.
    renderer.resize(r.width, r.height);
    // The plot takes its new aspect ratio (what maps cells to the screen) in the next frame.
    pending++;
    void plot.set({ width: r.width, height: r.height }).finally(() => pending--);
  });
  resize.observe(box);

  async function colour(c: Colouring): Promise<void> {
    spatialIndex ??= plot.get("spatialIndex") as ArrayBuffer | undefined;
    if (c.kind === "continuous") {
      const scale = c.max > 0 ? 1 / c.max : 0;
      for (let i = 0; i < n; i++) valueB[i] = Math.min(1, Math.max(0, c.values[i]! * scale));
      plot.set({ colorBy: "valueB", pointColor: viridis(256) });
    } else if (c.kind === "category") {
      // Missing (-1) takes the grey after the last category.
      for (let i = 0; i < n; i++) valueA[i] = c.codes[i]! < 0 ? c.nCategories : c.codes[i]!;
      plot.set({ colorBy: "valueA", pointColor: categoryColours(c.nCategories) });
    } else {
      plot.set({ colorBy: null, pointColor: "#4a78b5" });
    }
    const opts = spatialIndex
      ? {
          spatialIndex,
          zDataType: "categorical" as const,
          wDataType: "continuous" as const,
          preventFilterReset: true,
        }
      : { zDataType: "categorical" as const, wDataType: "continuous" as const, preventFilterReset: true };
    await plot.draw({ x: coords.x, y: coords.y, valueA, valueB }, opts);
  }

  return {
    async setColouring(c) {
      pending++;
      const mine = drawn.then(() => colour(c));
      drawn = mine.catch(() => undefined);
      try {
        await mine;
      } finally {
        pending--;
      }
    },
    select(cells) {
      plot.select(cells);
    },
    screenPosition(cell) {
      return plot.getScreenPosition(cell) as [number, number] | undefined;
    },
    settled() {
      const r = box.getBoundingClientRect();
      return pending === 0 && r.width === size[0] && r.height === size[1];
    },
    destroy() {
      resize.disconnect();
      plot.destroy();
      renderer.destroy();
    },
  };
}
