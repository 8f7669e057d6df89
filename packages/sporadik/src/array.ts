/**
 * The convenience layer: an array's layouts held together and built from whatever the values came
 * in as ({@link SparseArray}), and a written store opened once with a reader per axis
 * ({@link openArrayReader}). Nothing here is normative; it builds the same layouts by the same construction.
 */
import { ChunkCache, Limiter } from "./chunks.js";
import type { NumericArray } from "./dtypes.js";
import { LayoutError } from "./errors.js";
import {
  type CompressedMatrix,
  type CoordinateArray,
  coordsOfLayout,
  type Duplicates,
  type Layout,
  layoutFromCompressed,
  layoutFromCoords,
  layoutFromDense,
  layoutsByAxis,
} from "./layout.js";
import {
  describe,
  type LayoutInfo,
  type ReaderOptions,
  type Slice,
  SparseReader,
  type StoreInfo,
} from "./reader.js";
import type { Selection } from "./selection.js";
import { normalizePrefix, type ReadableStore, type WritableStore } from "./store.js";
import { type WriteOptions, writeStore } from "./writer.js";
import type { Decompressors } from "./zarr.js";

const NONE =
  "A sparse array is its layouts, and there is no state in which one exists and holds none: name at least one axis.";

/** The axes to build, every one by default; refuses none and axes outside the shape. */
function wantedAxes(rank: number, shape: readonly number[], axes: readonly number[] | undefined): number[] {
  if (axes === undefined) return Array.from({ length: rank }, (_, k) => k);
  if (axes.length === 0) throw new LayoutError(NONE);
  for (const axis of axes) {
    if (!Number.isInteger(axis) || axis < 0 || axis >= rank) {
      throw new LayoutError(
        `axis ${axis} is not an axis of shape [${shape.join(", ")}], so nothing could compress along it.`,
      );
    }
  }
  return [...new Set(axes)].sort((a, b) => a - b);
}

/** One array in up to one layout per axis, immutable. */
export class SparseArray {
  /** The layouts, keyed by the axis each makes contiguous. */
  readonly layouts: ReadonlyMap<number, Layout>;

  private constructor(layouts: ReadonlyMap<number, Layout>) {
    if (layouts.size === 0) throw new LayoutError(NONE);
    this.layouts = layouts;
  }

  /**
   * From layouts already built. `axes` selects among them; an axis not among them is refused, since
   * it cannot be built without going back to the coordinates (use {@link SparseArray.withAxis}).
   */
  static fromLayouts(
    layouts: Layout | readonly Layout[],
    options: { axes?: readonly number[] } = {},
  ): SparseArray {
    const built = layoutsByAxis(layouts);
    if (options.axes === undefined) return new SparseArray(built);
    if (options.axes.length === 0) throw new LayoutError(NONE);
    const kept = new Map<number, Layout>();
    for (const axis of [...options.axes].sort((a, b) => a - b)) {
      const layout = built.get(axis);
      if (layout === undefined) {
        throw new LayoutError(
          `These layouts compress [${[...built.keys()].sort((a, b) => a - b).join(", ")}], not axis ${axis}. They are already built, so another axis cannot be compressed from the choice alone: build it with withAxis(${axis}) or from the coordinates.`,
        );
      }
      kept.set(axis, layout);
    }
    return new SparseArray(kept);
  }

  /** From one CSR or CSC matrix, compressed along every axis asked for (both by default). */
  static fromMatrix(matrix: CompressedMatrix, options: { axes?: readonly number[] } = {}): SparseArray {
    const base = layoutFromCompressed(matrix);
    let array = new SparseArray(new Map([[base.indexedAxis, base]]));
    for (const axis of wantedAxes(2, base.shape, options.axes)) array = array.withAxis(axis);
    return options.axes === undefined ? array : SparseArray.fromLayouts([...array.layouts.values()], options);
  }

  /** From coordinates (one array per axis, in axis order) and values, at any rank. */
  static fromCoords(
    shape: readonly number[],
    coords: readonly CoordinateArray[],
    values: NumericArray,
    options: { axes?: readonly number[]; duplicates?: Duplicates } = {},
  ): SparseArray {
    const duplicates = options.duplicates ?? "sum";
    const axes = wantedAxes(shape.length, shape, options.axes);
    return new SparseArray(
      new Map(axes.map((axis) => [axis, layoutFromCoords(shape, coords, values, axis, { duplicates })])),
    );
  }

  /** From a dense row-major array, keeping the nonzero cells. Small arrays only. */
  static fromDense(
    shape: readonly number[],
    dense: NumericArray,
    options: { axes?: readonly number[] } = {},
  ): SparseArray {
    const axes = wantedAxes(shape.length, shape, options.axes);
    return new SparseArray(new Map(axes.map((axis) => [axis, layoutFromDense(shape, dense, axis)])));
  }

  /** The array's shape. */
  get shape(): readonly number[] {
    return (this.layouts.values().next().value as Layout).shape;
  }

  /** How many axes. */
  get rank(): number {
    return this.shape.length;
  }

  /** How many values the array holds (once, not once per layout). */
  get nnz(): number {
    return (this.layouts.values().next().value as Layout).data.length;
  }

  /** The axes this array can be selected along in one contiguous read. */
  get indexedAxes(): number[] {
    return [...this.layouts.keys()].sort((a, b) => a - b);
  }

  /** The layout compressing `axis`, or a refusal naming the ones there are. */
  layout(axis: number): Layout {
    const held = this.layouts.get(axis);
    if (held === undefined) {
      throw new LayoutError(
        `This array compresses [${this.indexedAxes.join(", ")}], not axis ${axis}. Add it with withAxis(${axis}), which costs another copy of the values, or select along an axis it compresses.`,
      );
    }
    return held;
  }

  /** The same array, also compressed along `axis` (re-compressed through the coordinates). */
  withAxis(axis: number): SparseArray {
    if (this.layouts.has(axis)) return this;
    wantedAxes(this.rank, this.shape, [axis]);
    const { coords, values } = this.toCoords();
    const added = layoutFromCoords(this.shape, coords, values, axis, { duplicates: "refuse" });
    const entries: [number, Layout][] = [...this.layouts, [axis, added]];
    return new SparseArray(new Map(entries.sort((a, b) => a[0] - b[0])));
  }

  /** Back to coordinates (one array per axis, in axis order) and values. */
  toCoords(): { coords: Float64Array[]; values: NumericArray } {
    return coordsOfLayout(this.layouts.values().next().value as Layout);
  }

  /** Write every layout as a sporadik store, the block last. */
  write(store: WritableStore, options: WriteOptions = {}) {
    return writeStore(store, [...this.layouts.values()], options);
  }
}

/** Options of {@link openArrayReader}. */
export interface OpenArrayReaderOptions {
  prefix?: string;
  signal?: AbortSignal;
  /** Bytes of decoded chunks kept for reuse, one cache shared by the readers of every axis. Default 64 MiB. */
  cacheBytes?: number;
  /** Store requests in flight at once, across every axis. Default 64. */
  concurrency?: number;
  /** Chunk decoders to use instead of zarrita's registry, as for {@link openReader}. */
  decompressors?: Decompressors;
  /** Check the positions of every slice read, as for {@link openReader}. Default false. */
  checkIndices?: boolean;
  /** Read a missing `data` chunk as zeros instead of refusing it, as for {@link openReader}. Default false. */
  fillMissingData?: boolean;
}

/** A written store, described once, with a reader per axis opened when first asked for. */
export class SparseArrayReader {
  readonly info: StoreInfo;
  readonly #store: ReadableStore;
  readonly #root: string;
  readonly #options: ReaderOptions;
  readonly #readers = new Map<number, SparseReader>();

  /** Use {@link openArrayReader}. @internal */
  constructor(store: ReadableStore, root: string, info: StoreInfo, options: ReaderOptions = {}) {
    this.#store = store;
    this.#root = root;
    this.info = info;
    // Every axis's reader shares one cache and one limiter.
    this.#options = {
      ...options,
      cache: options.cache ?? new ChunkCache(),
      limiter: options.limiter ?? new Limiter(),
    };
  }

  get shape(): readonly number[] {
    return this.info.shape;
  }

  get rank(): number {
    return this.info.shape.length;
  }

  /** The axes the store answers in one contiguous read; every other question is a scan. */
  get indexedAxes(): number[] {
    return [...this.info.layouts.keys()].sort((a, b) => a - b);
  }

  get nnz(): number {
    return (this.info.layouts.values().next().value as LayoutInfo).nnz;
  }

  get dtype(): string {
    return (this.info.layouts.values().next().value as LayoutInfo).dtype;
  }

  /**
   * The reader for one layout. The axis is the caller's to name: it may be left out only when the
   * store holds exactly one layout, and an axis without a layout is refused.
   */
  along(axis?: number): SparseReader {
    let chosen = axis;
    if (chosen === undefined) {
      if (this.info.layouts.size !== 1) {
        throw new LayoutError(
          `This store compresses axes [${this.indexedAxes.join(", ")}], so which one to read is a decision: it is the whole of what they differ in. Pass { axis }.`,
        );
      }
      chosen = this.indexedAxes[0] as number;
    }
    const info = this.info.layouts.get(chosen);
    if (info === undefined) {
      throw new LayoutError(
        `This store compresses [${this.indexedAxes.join(", ")}], not axis ${chosen}. Reading along an axis no layout compresses is not slower, it is a scan of every byte.`,
      );
    }
    let reader = this.#readers.get(chosen);
    if (reader === undefined) {
      reader = new SparseReader(this.#store, this.#root, this.info, info, this.#options);
      this.#readers.set(chosen, reader);
    }
    return reader;
  }

  boundsAt(position: number, options: { axis?: number } = {}): Promise<[number, number]> {
    return this.along(options.axis).boundsAt(position);
  }

  sliceAt(position: number, options: { axis?: number } = {}): Promise<Slice> {
    return this.along(options.axis).sliceAt(position);
  }

  coordsAt(position: number, options: { axis?: number } = {}) {
    return this.along(options.axis).coordsAt(position);
  }

  denseSlice(position: number, options: { axis?: number } = {}) {
    return this.along(options.axis).denseSlice(position);
  }

  slicesAt(positions: ArrayLike<number>, options: { axis?: number } = {}): Promise<Selection> {
    return this.along(options.axis).slicesAt(positions);
  }

  slicesOver(start: number, stop: number, options: { axis?: number } = {}): Promise<Selection> {
    return this.along(options.axis).slicesOver(start, stop);
  }

  denseSlices(positions: ArrayLike<number>, options: { axis?: number } = {}) {
    return this.along(options.axis).denseSlices(positions);
  }

  maxima(options: { axis?: number } = {}): Promise<NumericArray> {
    return this.along(options.axis).maxima();
  }

  /** Every layout read back into memory. */
  async toArray(): Promise<SparseArray> {
    const layouts = await Promise.all(this.indexedAxes.map((axis) => this.along(axis).readLayout()));
    return SparseArray.fromLayouts(layouts);
  }
}

/** Open a written store: describe it once, and keep one reader per axis. */
export async function openArrayReader(
  store: ReadableStore,
  options: OpenArrayReaderOptions = {},
): Promise<SparseArrayReader> {
  const info = await describe(store, options);
  return new SparseArrayReader(store, normalizePrefix(options.prefix), info, {
    cache: new ChunkCache(options.cacheBytes),
    limiter: new Limiter(options.concurrency ?? 64),
    ...(options.decompressors ? { decompressors: options.decompressors } : {}),
    ...(options.checkIndices !== undefined ? { checkIndices: options.checkIndices } : {}),
    ...(options.fillMissingData !== undefined ? { fillMissingData: options.fillMissingData } : {}),
  });
}
