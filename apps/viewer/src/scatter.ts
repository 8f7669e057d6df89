/**
 * The embedding as a WebGL scatter (regl-scatterplot: pan, zoom, hover, click, shift-drag lasso,
 * millions of points). Positions are set once; colouring only replaces the per-point values and
 * reuses the spatial index, so a new gene redraws without rebuilding anything.
 *
 * Level of detail: while the view moves (wheel, drag), only a fixed random subset of the cells is
 * drawn (plus the selection), through regl-scatterplot's own point filter; once the view has been
 * still for a moment every cell is drawn again. Without a GPU (SwiftShader) a frame costs about
 * 2 us of CPU per point, so 500,000 cells are 1 s a frame and the subset is what keeps a gesture
 * interactive. Nothing that reads cells (click, lasso, programmatic selection, colouring) runs on
 * the subset: each of them first returns to all cells. The same subset is the first thing drawn
 * (a preview, its own small set of points): the time to a drawn embedding is then bounded whatever
 * the number of cells, and every cell follows.
 *
 * Above that size the page picks the cells of a click or lasso itself, among all of them, from
 * the hover grid below (the nearest cell within the pick radius; the cells inside the lasso's
 * polygon, by regl-scatterplot's own test), and hands the plot a spatial index of no point. The
 * plot's own picking needs its KDBush over every cell, which it builds on a worker from a copy of
 * every point: at 5,000,000 cells 2.3-2.8 s of the page's main thread for the copy and ~5 s of a core
 * for the index, during which the plot ignored the mouse; and while the preview is drawn its
 * points are not the cells. The page's picking answers from the first frame on, whatever is
 * drawn yet. A colouring asked for while the preview is drawn colours it at once, then comes with
 * every cell (one draw of them, not two); one replaced by a later colouring before it is drawn is
 * not drawn. Below the subset's size the plot picks, as always.
 *
 * The selection is the page's own too (src/selection-overlay.ts): drawn over the plot, only the
 * selected cells, so selecting 10,000 of a million cells does not redraw the million. The plot
 * never holds a selection: its click and lasso hand their cells over and are cleared at once.
 *
 * Hover is the page's own: regl-scatterplot redraws every point on each pointer move over a point
 * (to outline it), a full frame per move. The page instead finds the nearest cell itself (in a grid
 * over the positions built once, src/nearest.ts: the cells near the pointer, not all of them), within
 * the size the points are drawn at in the current zoom and 4 px, and rings it with an element over
 * the canvas; the plot never learns the pointer is over it (its enter and leave events are kept
 * from it).
 */
import createScatterplot, { createRenderer, createSpatialIndex } from "regl-scatterplot";
import { categoryColours, viridis } from "./colors.js";
import { CellGrid, drawnPointSize } from "./nearest.js";
import type { Codes } from "./obs.js";
import { createSelectionOverlay } from "./selection-overlay.js";

/**
 * What colours the cells: values over `[lo, hi]` (viridis; `lo` defaults to 0), category codes
 * (code `nCategories`: missing, grey), or nothing. The page hands over values per cell; the plot
 * maps them to colours in its shader.
 */
export type Colouring =
  | { kind: "continuous"; values: Float32Array; max: number; min?: number }
  | { kind: "category"; codes: Codes; nCategories: number }
  | { kind: "none" };

export interface Scatter {
  /**
   * Colours the cells: resolved once drawn, on the preview while it is what the plot draws (every
   * cell follows with it), else on every cell; without a draw when a later colouring replaced it
   * before its turn.
   */
  setColouring(c: Colouring): Promise<void>;
  /** Every cell has been drawn (after the preview, above its size). */
  readonly allDrawn: Promise<void>;
  /** Draws only the cells `hidden` does not mark (1: hidden), or every cell without it. */
  setHidden(hidden: Uint8Array | undefined): void;
  /** Selects cells as a click or lasso would (the test drives clicks through screen positions). */
  select(cells: number[]): void;
  screenPosition(cell: number): [number, number] | undefined;
  /**
   * No colouring is being drawn, every cell is drawn again after a pan or zoom, and the plot has
   * the size of its box (no resize pending): screen positions are final and a click reaches the
   * points (regl-scatterplot ignores the mouse while it replaces the points).
   */
  settled(): boolean;
  /**
   * What the plot itself holds and draws now (for tests: compared with the page's own state);
   * the per-cell values and the selection only when asked (500,000 of them are not free).
   * Without them it is one object updated in place on each call, so a bench may read it in every
   * frame it measures without allocating: copy what is to be kept.
   */
  inspect(full?: boolean): PlotState;
  destroy(): void;
}

export interface PlotState {
  /** Cells drawn in the latest frames: all of them, or the subset while the view moves or first. */
  drawn: number;
  /** Only the first subset is drawn: every cell is not yet. */
  preview: boolean;
  /** The plot has its box's size, no resize pending: a cell's screen position holds (while the view is still). */
  placed: boolean;
  /** The cells of that subset, while it is drawn (empty unless inspected in full). */
  previewCells: readonly number[];
  /** The subset is drawn (the view is moving or has not settled yet). */
  subset: boolean;
  /** Times the plot switched to the subset. */
  swaps: number;
  /** Frames drawn with the subset. */
  subsetFrames: number;
  /** Cells the latest subset frame drew, and the selected cells drawn over it. */
  subsetCells: number;
  subsetSelected: number;
  /** The selected cells drawn (empty unless inspected in full). */
  selected: readonly number[];
  colorBy: string | null;
  /** Per cell, the value the plot colours it by (its `valueZ` or `valueW`; empty without colouring, or unless inspected in full). */
  values: readonly number[];
}

/** The empty list of an inspection that was not full. */
const NONE: readonly number[] = Object.freeze([]);

/** Cells drawn while the view moves: ~100 ms a frame in software GL (bench/viewer-interaction.ts). */
export const LOD_POINTS = 40_000;
/**
 * The view counts as settled this long after the last wheel or drag step, or two subset frames if
 * longer, and only once two animation frames have passed without a step: counted in frames, not
 * by a timer, a page starved of CPU (whose input waits with its frames) does not settle mid-gesture.
 */
const SETTLE_MS = 200;

/** A sorted random sample of `k` of `0..n-1` (seeded: the same subset every time). */
export function sample(n: number, k: number): Int32Array {
  const all = new Int32Array(n);
  for (let i = 0; i < n; i++) all[i] = i;
  let seed = 0x9e3779b9;
  for (let i = 0; i < k; i++) {
    // xorshift32; a partial Fisher-Yates shuffle of the first k.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    const j = i + ((seed >>> 0) % (n - i));
    const t = all[i]!;
    all[i] = all[j]!;
    all[j] = t;
  }
  return all.subarray(0, k).sort();
}

export function createScatter(
  canvas: HTMLCanvasElement,
  coords: { x: Float32Array; y: Float32Array },
  on: {
    /** The cell under the pointer (or none), and where the pointer is in the plot's pixels. */
    hover(cell: number | undefined, x: number, y: number): void;
    select(cells: number[]): void;
    drawn?(): void;
    /** The first frame of the embedding is drawn (the preview of a subset above its size). */
    firstFrame?(): void;
  },
  options: {
    lodPoints?: number;
    /** Every cell is drawn once this settles, after the preview (tests act while only it is drawn). */
    allCellsAfter?: Promise<unknown>;
  } = {},
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
  const pointSize = n > 100_000 ? 1.5 : n > 10_000 ? 3 : 5;
  const plot = createScatterplot({
    renderer,
    canvas,
    width,
    height,
    pointSize,
    pointColor: "#4a78b5",
    backgroundColor: "#ffffff",
    lassoColor: "#333333",
    opacity: n > 100_000 ? 0.6 : 0.9,
    // Square points without alpha blending: regl-scatterplot's mode for millions of points.
    performanceMode: n > 200_000,
    // Shift lassoes; the plot's own merge (cmd) and remove (alt) would act on a selection it never
    // holds (the overlay below has it), and alt-drag would rotate an embedding: the page combines.
    keyMap: { shift: "lasso" } as never,
  });
  /** How a click or lasso combines with the selection: ctrl or cmd adds its cells, alt removes them. */
  let combine: "replace" | "add" | "remove" = "replace";
  const noteModifiers = (e: MouseEvent) => {
    combine = e.ctrlKey || e.metaKey ? "add" : e.altKey ? "remove" : "replace";
  };
  /** A click or lasso's cells, combined with the selection as its modifiers say. */
  function picked(cells: number[]): void {
    if (combine === "replace") setSelection(cells);
    else {
      const these = new Set(cells);
      const kept = overlay.cells.filter((c) => !these.has(c));
      setSelection((combine === "add" ? [...kept, ...cells] : kept).sort((a, b) => a - b));
    }
  }
  // A click or lasso of the plot: its cells go to the overlay, and the plot lets go of them (in
  // the same task, before its next frame) so that it never draws a selection of its own. Above
  // the subset's size the plot finds none (its index holds no point): the page picks (below).
  plot.subscribe("select", ({ points }: { points: number[] }) => {
    const cells = [...points];
    plot.deselect({ preventEvent: true });
    if (!ownPicking) picked(cells);
  });
  // The lasso's polygon, in the cells' coordinates: its cells among all of them.
  plot.subscribe("lassoEnd", ({ coordinates }: { coordinates: [number, number][] }) => {
    if (!ownPicking) return;
    const cells = grid.inPolygon(coordinates.flat(), hiddenCells);
    // As the plot's: a lasso around no cell leaves the selection as it is.
    if (cells.length > 0) picked(cells);
  });
  // Level of detail (below): the subset is drawn, how often it was switched to and drawn.
  let subset = false;
  let swaps = 0;
  let subsetFrames = 0;
  let subsetCells = 0;
  let subsetSelected = 0;
  /** The latest interval between two subset frames, and when the latest was drawn. */
  let frameMs = 0;
  let lastFrame = 0;
  plot.subscribe("draw", () => {
    if (subset) {
      const now = performance.now();
      if (lastFrame > 0) frameMs = now - lastFrame;
      else {
        // The first subset frame of a gesture: the cells it draws and the selection it holds (a
        // copy of the selection, so not in every frame). Neither changes until the view is still
        // again: every way to select or recolour returns to all cells first.
        subsetCells = plot.get("isPointsFiltered") ? drawing : n;
        subsetSelected = visibleSelected();
      }
      lastFrame = now;
      subsetFrames++;
    }
    on.drawn?.();
  });
  const valueA = new Float32Array(n);
  const valueB = new Float32Array(n);
  // Colourings are drawn one after the other (regl-scatterplot refuses a draw while one runs).
  /** Draws (the first one and colourings), resizes and returns to all cells not yet applied. */
  let pending = 1;
  /** Draws that replace the points (the first one and colourings): they reset the point filter. */
  let replacing = 1;
  const lodPoints = options.lodPoints ?? LOD_POINTS;
  let lodCells: Int32Array | undefined;
  /** The page picks the cells of clicks and lassos (see the top): above the subset's size. */
  const ownPicking = n > lodPoints;
  /**
   * The plot draws the preview (the subset as points of their own, indices into it): its points
   * are not the cells, so positions and hover wait for every cell; clicks and lassos do not.
   */
  let preview = ownPicking;
  // Said over the plot while it lasts (tens of seconds for millions of cells without a GPU), so
  // that a user knows the cells missing are coming and that a click or lasso takes them too.
  const note = preview ? document.createElement("div") : undefined;
  if (note) {
    note.className = "plot-note";
    note.textContent = `${Math.min(n, lodPoints).toLocaleString("en")} of ${n.toLocaleString("en")} cells shown while every cell is drawn; clicks and lassos select among all of them`;
    box.appendChild(note);
  }
  const all = { x: coords.x, y: coords.y, valueA, valueB };
  /** The plot's spatial index, reused by every draw of the same points (none for its own when ownPicking). */
  let spatialIndex: ArrayBuffer | undefined;
  /** The latest colouring's number (one replaced before it is drawn is not drawn). */
  let latest = 0;
  let allDrawn!: () => void;
  const everyCell = new Promise<void>((resolve) => (allDrawn = resolve));
  const first = ownPicking
    ? createSpatialIndex({ x: new Float32Array(0), y: new Float32Array(0) }, false)
        .then((none) => {
          spatialIndex = none;
          return plot.draw(previewPoints(), drawOptions());
        })
        .then(() => {
          on.firstFrame?.();
          drawAllLater();
        })
    : plot.draw(all).then(() => {
        on.firstFrame?.();
        allDrawn();
      });
  let drawn: Promise<unknown> = first.finally(() => {
    pending--;
    replacing--;
  });

  /** Queues a draw that replaces the points after the draws under way, counted until it is done. */
  function queue(step: () => Promise<void>): Promise<void> {
    pending++;
    replacing++;
    const mine = drawn.then(step);
    drawn = mine.catch(() => undefined);
    return mine.finally(() => {
      pending--;
      replacing--;
    });
  }

  /**
   * Every cell after the preview, once `allCellsAfter` settles: queued behind the colourings asked
   * for until then, which colour the preview at once and so come with every cell.
   */
  function drawAllLater(): void {
    pending++;
    replacing++;
    void Promise.resolve(options.allCellsAfter)
      .then(() => queue(drawAll))
      // As every queued draw's: a plot destroyed meanwhile (another embedding drawn) draws no more.
      .catch(() => undefined)
      .finally(() => {
        pending--;
        replacing--;
      });
  }

  /** The options of every draw: the index, the values' types, the point filter kept. */
  function drawOptions() {
    return {
      ...(spatialIndex ? { spatialIndex } : {}),
      zDataType: "categorical" as const,
      wDataType: "continuous" as const,
      preventFilterReset: true,
    };
  }

  /** The subset's positions and values (the colouring's, once one is applied). */
  function previewPoints() {
    lodCells ??= sample(n, lodPoints);
    const pick = (a: Float32Array) => Float32Array.from(lodCells!, (c) => a[c]!);
    return { x: pick(coords.x), y: pick(coords.y), valueA: pick(valueA), valueB: pick(valueB) };
  }

  /** Every cell in place of the preview, then the cells hidden meanwhile hidden. */
  async function drawAll(): Promise<void> {
    await plot.draw(all, drawOptions());
    preview = false;
    note?.remove();
    if (hiddenCells) showAll();
    allDrawn();
  }
  let size = [width, height];
  /** Resizes not yet taken by the plot (it maps cells to the screen with its old size meanwhile). */
  let resizing = 0;

  /** No resize pending and the plot has its box's size: cells stay where they are on screen. */
  function placed(): boolean {
    const r = box.getBoundingClientRect();
    return resizing === 0 && r.width === size[0] && r.height === size[1];
  }
  /** What {@link Scatter.inspect} answers, updated in place. */
  const inspected: PlotState = {
    drawn: n,
    preview,
    placed: false,
    previewCells: NONE,
    subset: false,
    swaps: 0,
    subsetFrames: 0,
    subsetCells: 0,
    subsetSelected: 0,
    selected: NONE,
    colorBy: null,
    values: NONE,
  };

  const resize = new ResizeObserver(() => {
    const r = box.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return;
    size = [r.width, r.height];
    // The renderer first: the plot copies the centre of the renderer's canvas, which must cover it.
    renderer.resize(r.width, r.height);
    // The plot takes its new aspect ratio (what maps cells to the screen) in the next frame.
    pending++;
    resizing++;
    void plot.set({ width: r.width, height: r.height }).finally(() => {
      pending--;
      resizing--;
    });
    // The cells move on screen with the new aspect ratio: a ring left in place would mark another spot.
    setHover(undefined);
    overlay.redraw();
  });
  resize.observe(box);

  // ---- hover ----
  const ring = document.createElement("div");
  ring.className = "hover-ring";
  ring.hidden = true;
  box.appendChild(ring);
  let hovered: number | undefined;
  /** The pointer over the plot, in its pixels (NaN: not over it). */
  let pointerX = Number.NaN;
  let pointerY = Number.NaN;
  let pickFrame = 0;
  const grid = CellGrid.build(coords.x, coords.y);
  const map = new Float64Array(6);

  /** The screen transform regl-scatterplot applies (its getScreenPosition, as one affine map). */
  function screenMap(): Float64Array {
    const v = plot.get("cameraView") as Float32Array;
    const w = size[0]!;
    const h = size[1]!;
    const a = plot.get("aspectRatio") as number; // the data's, a scale on x
    const k = w / 2 / (w / h); // clip x to pixels, with the view's aspect ratio
    map[0] = v[0]! * a * k;
    map[1] = v[4]! * k;
    map[2] = (v[12]! / (w / h) + 1) * (w / 2);
    map[3] = (-v[1]! * a * h) / 2;
    map[4] = (-v[5]! * h) / 2;
    map[5] = h * (0.5 - v[13]! / 2);
    return map;
  }

  /** The size points are drawn at in the current zoom (the camera's scaling, the length of its view's first column). */
  function drawnSize(): number {
    const v = plot.get("cameraView") as Float32Array;
    return drawnPointSize(pointSize, Math.sqrt(v[0]! * v[0]! + v[1]! * v[1]!));
  }

  /** The pick radius, as regl-scatterplot's own picking: the size points are drawn at and 4 px. */
  function radius(): number {
    return drawnSize() + 4;
  }

  /** Where the plot draws `cell` now, in pixels of its box (the hover ring, positions during the preview). */
  function cellOnScreen(cell: number): [number, number] {
    const m = screenMap();
    const x = coords.x[cell]!;
    const y = coords.y[cell]!;
    return [m[0]! * x + m[1]! * y + m[2]!, m[3]! * x + m[4]! * y + m[5]!];
  }

  /** The cell nearest to the pointer within the pick radius (not a hidden one). */
  function pick(px: number, py: number): number | undefined {
    const found = grid.nearest(screenMap(), px, py, radius(), hiddenCells);
    return found < 0 ? undefined : found;
  }

  function setHover(cell: number | undefined): void {
    // The same cell stays where its ring is: any move of the view or resize clears the hover first.
    if (cell === hovered) return;
    if (cell !== undefined) {
      const [sx, sy] = cellOnScreen(cell);
      ring.style.transform = `translate(${sx}px, ${sy}px)`;
    }
    ring.hidden = cell === undefined;
    hovered = cell;
    on.hover(cell, pointerX, pointerY);
  }

  // One pick per frame, with the latest pointer position; none while a button is down (a drag).
  const onHoverMove = (e: MouseEvent) => {
    if (e.buttons !== 0) return;
    const r = canvas.getBoundingClientRect();
    pointerX = e.clientX - r.left;
    pointerY = e.clientY - r.top;
    pickFrame ||= requestAnimationFrame(() => {
      pickFrame = 0;
      if (!Number.isNaN(pointerX) && !subset && !preview) setHover(pick(pointerX, pointerY));
    });
  };
  const onLeave = (e: MouseEvent) => {
    if (e.isTrusted) e.stopImmediatePropagation();
    pointerX = pointerY = Number.NaN;
    setHover(undefined);
  };
  // Kept from the plot (see the top): it then never hovers, nor redraws on a pointer move.
  const onEnter = (e: MouseEvent) => e.stopImmediatePropagation();
  canvas.addEventListener("mousemove", onHoverMove);
  canvas.addEventListener("mouseleave", onLeave, { capture: true });
  canvas.addEventListener("mouseenter", onEnter, { capture: true });
  // The plot takes the pointer as outside until told otherwise; after a blur it looks again.
  const outside = () => canvas.dispatchEvent(new MouseEvent("mouseleave"));
  outside();
  window.addEventListener("blur", outside);

  // ---- selection ----
  const overlay = createSelectionOverlay(box, coords, {
    screenMap,
    size: () => size,
    pointSize: drawnSize,
    hidden: () => hiddenCells,
  });
  plot.subscribe("view", () => overlay.redraw());

  /** The selected cells that are drawn (not hidden). */
  function visibleSelected(): number {
    let k = 0;
    for (const c of overlay.cells) if (!hiddenCells?.[c]) k++;
    return k;
  }

  /** A new selection (cells of the plot, not hidden), told to the page unless it is the same. */
  function setSelection(cells: number[]): void {
    const valid = cells.filter((c) => c >= 0 && c < n && !hiddenCells?.[c]);
    const old = overlay.cells;
    if (valid.length === old.length && (valid.length === 0 || sameCells(valid, old))) return;
    overlay.set(valid);
    on.select(valid);
  }
  // As the plot's own deselection: a double click or Escape clears the selection.
  const onDblClick = () => setSelection([]);
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Escape") setSelection([]);
  };
  box.addEventListener("dblclick", onDblClick);
  window.addEventListener("keyup", onKey);

  // ---- level of detail ----
  /** Cells of hidden categories (1), or undefined when every cell is shown. */
  let hiddenCells: Uint8Array | undefined;
  /** Cells the filter lets through. */
  let drawing = n;
  /** When the latest wheel or drag step came, animation frames since, the frame that checks. */
  let lastInput = 0;
  let quietFrames = 0;
  let settleFrame = 0;
  let buttonDown = false;
  let downAt = [0, 0];

  /** The view is about to move: draw the subset until it settles (the selection stays over it). */
  function moving(): void {
    setHover(undefined); // the ring would stay where the cell was
    lastInput = performance.now();
    quietFrames = 0;
    // Not while a colouring replaces the points (its draw resets the filter).
    if (subset || n <= lodPoints || replacing > 0) return;
    lodCells ??= sample(n, lodPoints);
    const cells = Array.from(hiddenCells ? lodCells.filter((c) => !hiddenCells![c]) : lodCells);
    subset = true;
    swaps++;
    lastFrame = 0;
    drawing = cells.length;
    void plot.filter(cells, { preventEvent: true });
    settleFrame ||= requestAnimationFrame(settle);
  }

  const settleMs = () => Math.max(SETTLE_MS, 2 * frameMs);

  /** Each animation frame while the subset is drawn: back to every cell once the view is still. */
  function settle(): void {
    settleFrame = 0;
    if (!subset) return;
    quietFrames++;
    // Not while a drag holds the view, nor before the subset has been drawn once.
    const still = !buttonDown && lastFrame > 0 && quietFrames >= 2;
    if (still && performance.now() - lastInput >= settleMs()) full();
    else settleFrame = requestAnimationFrame(settle);
  }

  /** Back to every cell, at once: the index buffer and the picking set are replaced synchronously. */
  function full(): void {
    if (settleFrame) cancelAnimationFrame(settleFrame);
    settleFrame = 0;
    if (!subset) return;
    subset = false;
    showAll();
  }

  /** Every cell that is not hidden. */
  function showAll(): void {
    pending++;
    if (hiddenCells) {
      const visible: number[] = [];
      for (let i = 0; i < n; i++) if (!hiddenCells[i]) visible.push(i);
      drawing = visible.length;
      void plot.filter(visible, { preventEvent: true }).finally(() => pending--);
    } else {
      drawing = n;
      void plot.unfilter({ preventEvent: true }).finally(() => pending--);
    }
  }

  // Capture on the plot's box: these run before regl-scatterplot's and its camera's own handlers.
  const onWheel = () => moving();
  const onDown = (e: MouseEvent) => {
    noteModifiers(e);
    buttonDown = e.buttons === 1;
    downAt = [e.clientX, e.clientY];
    // A lasso (shift) picks among all cells; a drag may go on with the subset, a click ends it.
    if (e.shiftKey) full();
  };
  const onMove = (e: MouseEvent) => {
    if (buttonDown && e.buttons === 1 && !e.shiftKey) moving();
  };
  const onUp = (e: MouseEvent) => {
    noteModifiers(e);
    if (!buttonDown) return;
    buttonDown = false;
    lastInput = performance.now();
    quietFrames = 0;
  };
  // A click picks a cell (among all of them); the click that ends a drag does not (as the plot's
  // own: 3 px, its lassoMinDist). Above the subset's size the page picks it, whatever is drawn.
  const onClick = (e: MouseEvent) => {
    if (Math.hypot(e.clientX - downAt[0]!, e.clientY - downAt[1]!) >= 3) return;
    full();
    if (!ownPicking || e.target !== canvas) return;
    const r = canvas.getBoundingClientRect();
    const cell = pick(e.clientX - r.left, e.clientY - r.top);
    if (cell !== undefined) picked([cell]);
  };
  box.addEventListener("wheel", onWheel, { capture: true, passive: true });
  box.addEventListener("mousedown", onDown, { capture: true });
  box.addEventListener("click", onClick, { capture: true });
  window.addEventListener("mousemove", onMove, { capture: true });
  window.addEventListener("mouseup", onUp, { capture: true });

  /** Applies colouring number `mine`, unless a later one replaces it before it is drawn. */
  async function colour(c: Colouring, mine: number): Promise<void> {
    if (mine !== latest) return;
    spatialIndex ??= plot.get("spatialIndex") as ArrayBuffer | undefined;
    let colours: Parameters<typeof plot.set>[0];
    if (c.kind === "continuous") {
      const lo = c.min ?? 0;
      const scale = c.max > lo ? 1 / (c.max - lo) : 0;
      for (let i = 0; i < n; i++) valueB[i] = Math.min(1, Math.max(0, (c.values[i]! - lo) * scale));
      colours = { colorBy: "valueB", pointColor: viridis(256) };
    } else if (c.kind === "category") {
      // Missing (code nCategories) takes the grey after the last category.
      valueA.set(c.codes);
      colours = { colorBy: "valueA", pointColor: categoryColours(c.nCategories) };
    } else {
      colours = { colorBy: null, pointColor: "#4a78b5" };
    }
    // The colours first, and the points once the animation frame in which `set` asks for a redraw
    // has passed: set in the same task as the draw, that redraw came a frame after the draw's own,
    // a second frame of every point (4-5 s at 5,000,000 cells without a GPU) per colouring.
    await plot.set(colours);
    // While the preview is drawn, on it (40,000 points, at once): every cell follows with it.
    await plot.draw(preview ? previewPoints() : all, drawOptions());
  }

  return {
    setColouring(c) {
      full();
      const seq = ++latest;
      return queue(() => colour(c, seq));
    },
    allDrawn: everyCell,
    select(cells) {
      full();
      setSelection(cells);
    },
    setHidden(hidden) {
      full();
      hiddenCells = hidden;
      overlay.redraw();
      // After any draw under way (a colouring's draw keeps the filter: preventFilterReset); the
      // preview's points are not the cells: every cell is drawn with the filter (drawAll).
      pending++;
      const mine = drawn.then(() => {
        if (!preview) showAll();
      });
      drawn = mine.catch(() => undefined);
      void mine.finally(() => pending--);
    },
    screenPosition(cell) {
      if (!preview) return plot.getScreenPosition(cell) as [number, number] | undefined;
      // The preview's points are not the cells: where the plot will draw the cell.
      return cell >= 0 && cell < n ? cellOnScreen(cell) : undefined;
    },
    settled() {
      return pending === 0 && !subset && placed();
    },
    inspect(all = false) {
      const s = inspected;
      s.colorBy = plot.get("colorBy") as string | null;
      // The cells the filter lets through, as the plot was given them (its own list is a copy).
      s.drawn = preview ? (lodCells?.length ?? 0) : plot.get("isPointsFiltered") ? drawing : n;
      s.preview = preview;
      s.placed = placed();
      s.subset = subset;
      s.swaps = swaps;
      s.subsetFrames = subsetFrames;
      s.subsetCells = subsetCells;
      s.subsetSelected = subsetSelected;
      if (!all) return s;
      // regl-scatterplot names valueA and valueB valueZ and valueW (the 3rd and 4th coordinates).
      const k = s.colorBy === "valueZ" ? 2 : s.colorBy === "valueW" ? 3 : -1;
      return {
        ...s,
        // In full, the plot's own list of them.
        drawn: preview
          ? s.drawn
          : plot.get("isPointsFiltered")
            ? (plot.get("filteredPoints") as number[]).length
            : n,
        previewCells: preview && lodCells ? Array.from(lodCells) : NONE,
        selected: [...overlay.cells],
        values: k >= 0 ? (plot.get("points") as number[][]).map((p) => p[k]!) : NONE,
      };
    },
    destroy() {
      if (settleFrame) cancelAnimationFrame(settleFrame);
      if (pickFrame) cancelAnimationFrame(pickFrame);
      canvas.removeEventListener("mousemove", onHoverMove);
      canvas.removeEventListener("mouseleave", onLeave, { capture: true });
      canvas.removeEventListener("mouseenter", onEnter, { capture: true });
      window.removeEventListener("blur", outside);
      ring.remove();
      note?.remove();
      box.removeEventListener("dblclick", onDblClick);
      window.removeEventListener("keyup", onKey);
      overlay.destroy();
      box.removeEventListener("wheel", onWheel, { capture: true });
      box.removeEventListener("mousedown", onDown, { capture: true });
      box.removeEventListener("click", onClick, { capture: true });
      window.removeEventListener("mousemove", onMove, { capture: true });
      window.removeEventListener("mouseup", onUp, { capture: true });
      resize.disconnect();
      plot.destroy();
      renderer.destroy();
    },
  };
}

/** The same cells, in any order. */
function sameCells(a: readonly number[], b: readonly number[]): boolean {
  const set = new Set(b);
  return a.every((c) => set.has(c));
}
