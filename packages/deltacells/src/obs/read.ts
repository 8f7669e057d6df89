/**
 * Reading obs shards column by column with ranged reads: a shard's footer (two reads: its last
 * 8 bytes, then the footer they announce, by hyparquet) and, for each requested column, only that column's
 * chunk in each row group. Browser-safe (hyparquet, pure-JS decompressors).
 */
import type { ReadableStore } from "@deltacells/storage";
import type { Data } from "apache-arrow";
import type { AsyncBuffer, FileMetaData } from "hyparquet";
import type { DatasetManifest } from "../dataset/manifest.js";
import { pinned, rethrowChanged } from "../dataset/pin.js";
import { DeltacellsError } from "../errors.js";
import { loadDecompressors, loadParquet } from "../parquet-load.js";
import { loadArrow } from "./arrow-load.js";
import { checkFingerprint } from "./fingerprint.js";
import { columnMismatch } from "./parquet-type.js";
import {
  OBS_SCHEMA_KEY,
  type ObsColumnSchema,
  type ObsSchema,
  obsShardKey,
  parseObsSchema,
} from "./schema.js";

function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/** The obs shards of one dataset, read lazily; footers and the schema are cached. */
export class ObsShards {
  private schemaCache: Promise<ObsSchema> | undefined;
  private readonly footers = new Map<number, Promise<FileMetaData>>();
  /** First tile of each shard's tiles, and the tiles' first cells. */
  readonly tilesPerFile: number;

  readonly store: ReadableStore;
  readonly manifest: DatasetManifest;
  readonly url: string;
  /** The dataset's version pin (`Dataset.openedAt`): a shard rewritten since is `DatasetChanged`. */
  private readonly openedAt: number | undefined;

  constructor(parts: {
    store: ReadableStore;
    manifest: DatasetManifest;
    url: string;
    openedAt?: number | undefined;
  }) {
    const { manifest, url } = parts;
    this.store = parts.store;
    this.manifest = manifest;
    this.url = url;
    this.openedAt = parts.openedAt;
    if (!manifest.has_obs) {
      throw new DeltacellsError(
        `${url} has no obs (has_obs is false in its manifest): it was converted from an input without a cell table, or with the obs skip option`,
        { tag: "NotFound", object: `${url}/manifest.json`, field: "has_obs", expected: true, found: false },
      );
    }
    this.tilesPerFile = manifest.obs_tiles_per_file!;
  }

  /** `obs/schema.json`, checked against the manifest's fingerprint (a replaced schema is refused). */
  schema(opts: { signal?: AbortSignal } = {}): Promise<ObsSchema> {
    this.schemaCache ??= (async () => {
      const object = `${this.url}/${OBS_SCHEMA_KEY}`;
      const bytes = await this.store
        .get(OBS_SCHEMA_KEY, { ...opts, ...pinned(this.openedAt) })
        .catch((err: unknown) => rethrowChanged(err, this.url, OBS_SCHEMA_KEY));
      if (bytes === undefined)
        throw new DeltacellsError(`${object} is missing although has_obs is true: the dataset is damaged`, {
          tag: "NotFound",
          object,
        });
      const text = new TextDecoder().decode(bytes);
      const schema = parseObsSchema(text, object);
      const m = this.manifest;
      const { matches, strict } = await checkFingerprint(
        m.obs_fingerprint,
        text,
        m.tile_cells,
        m.obs_shard_sha256!,
      );
      if (!matches) {
        throw new DeltacellsError(
          `${object} does not belong to this manifest: with it the obs fingerprint is ${strict}, the manifest says ${m.obs_fingerprint}; the dataset was modified after conversion`,
          {
            tag: "InconsistentManifest",
            object,
            field: "obs_fingerprint",
            expected: m.obs_fingerprint,
            found: strict,
          },
        );
      }
      return schema;
    })();
    this.schemaCache.catch(() => {
      this.schemaCache = undefined;
    });
    return this.schemaCache;
  }

  /** The schema entry of each name, refusing unknown names with the list of those that exist. */
  async columns(
    names: string[] | undefined,
    opts: { signal?: AbortSignal } = {},
  ): Promise<ObsColumnSchema[]> {
    const schema = await this.schema(opts);
    if (names === undefined) return schema.columns;
    return names.map((n) => {
      const c = schema.columns.find((x) => x.name === n);
      if (!c) {
        throw new DeltacellsError(
          `${this.url} has no obs column ${JSON.stringify(n)}; it has ${schema.columns.map((x) => JSON.stringify(x.name)).join(", ")}`,
          {
            tag: "NotFound",
            object: `${this.url}/${OBS_SCHEMA_KEY}`,
            found: n,
            expected: schema.columns.map((x) => x.name),
          },
        );
      }
      return c;
    });
  }

  private file(s: number, signal?: AbortSignal): AsyncBuffer {
    const key = obsShardKey(s);
    const size = this.manifest.obs_shard_bytes![s]!;
    return {
      byteLength: size,
      slice: async (start: number, end = size) => {
        const bytes = await this.store
          .getRange(key, { offset: start, length: end - start }, { signal, ...pinned(this.openedAt) })
          .catch((err: unknown) => rethrowChanged(err, this.url, key));
        if (bytes === undefined) {
          throw new DeltacellsError(`${this.url}/${key} is missing, although the manifest lists it`, {
            tag: "NotFound",
            object: `${this.url}/${key}`,
          });
        }
        return toArrayBuffer(bytes);
      },
    };
  }

  /** Shard `s`'s footer, checked: one row group per tile with the tile's rows. */
  footer(s: number, opts: { signal?: AbortSignal } = {}): Promise<FileMetaData> {
    let p = this.footers.get(s);
    if (!p) {
      p = this.readFooter(s, opts.signal);
      p.catch(() => this.footers.delete(s));
      this.footers.set(s, p);
    }
    return p;
  }

  private async readFooter(s: number, signal?: AbortSignal): Promise<FileMetaData> {
    const key = obsShardKey(s);
    const object = `${this.url}/${key}`;
    const file = this.file(s, signal);
    const bad = (message: string, cause?: unknown) =>
      new DeltacellsError(`${object}: ${message}`, { tag: "FormatError", object, cause });
    if (file.byteLength < 12) throw bad(`${file.byteLength} bytes is too short for a parquet file`);
    let meta: FileMetaData;
    let reading = false; // a failure while reading is the store's, not a damaged footer
    const source: AsyncBuffer = {
      byteLength: file.byteLength,
      slice: async (start, end) => {
        reading = true;
        const bytes = await file.slice(start, end);
        reading = false;
        return bytes;
      },
    };
    try {
      // An 8-byte first read (the footer's length and PAR1), then the footer: the library's
      // default first read is the last 512 KiB, most or all of a shard, for a tile's few chunks.
      const { parquetMetadataAsync } = await loadParquet();
      meta = await parquetMetadataAsync(source, { initialFetchSize: 8 });
    } catch (err) {
      if (reading) throw err;
      throw bad(
        `no readable parquet footer at the end (${(err as Error).message}): the shard is truncated or replaced`,
        err,
      );
    }
    const k = this.tilesPerFile;
    const tiles = this.manifest.tile_cells.slice(s * k, (s + 1) * k);
    const rows = meta.row_groups.map((g) => Number(g.num_rows));
    if (rows.length !== tiles.length || rows.some((r, i) => r !== tiles[i])) {
      throw new DeltacellsError(
        `${object} has row groups of ${JSON.stringify(rows)} rows, but must hold one row group per tile with the tile's cells: ${JSON.stringify(tiles)}`,
        { tag: "InconsistentManifest", object, expected: tiles, found: rows },
      );
    }
    return meta;
  }

  /** Which shard holds tile `t`, and the tile's row group and first row in it. */
  private place(t: number, meta: FileMetaData): { group: number; rowStart: number } {
    const group = t % this.tilesPerFile;
    let rowStart = 0;
    for (let g = 0; g < group; g++) rowStart += Number(meta.row_groups[g]!.num_rows);
    return { group, rowStart };
  }

  /** Check the shard's parquet column against the schema before trusting its values. */
  private checkColumn(s: number, meta: FileMetaData, col: ObsColumnSchema): void {
    const mismatch = columnMismatch(
      meta.schema.find((e, i) => i > 0 && e.name === col.name),
      col,
    );
    if (mismatch !== undefined) {
      const object = `${this.url}/${obsShardKey(s)}`;
      throw new DeltacellsError(
        `${object}: column ${JSON.stringify(col.name)} is ${mismatch}, but ${OBS_SCHEMA_KEY} says ${col.kind} ${col.arrow_type}`,
        { tag: "InconsistentManifest", object, field: col.name, expected: col.arrow_type, found: mismatch },
      );
    }
  }

  /** Decoded values of rows `[rowStart, rowEnd)` of one column of shard `s`. */
  private async readRows(
    s: number,
    meta: FileMetaData,
    col: ObsColumnSchema,
    rowStart: number,
    rowEnd: number,
    signal?: AbortSignal,
  ): Promise<unknown[]> {
    const out = new Array<unknown>(rowEnd - rowStart);
    const [{ parquetRead }, compressors] = await Promise.all([loadParquet(), loadDecompressors()]);
    await parquetRead({
      file: this.file(s, signal),
      metadata: meta,
      columns: [col.name],
      rowStart,
      rowEnd,
      compressors,
      onChunk: (c) => {
        const data = c.columnData as ArrayLike<unknown>;
        const from = Math.max(c.rowStart, rowStart);
        const to = Math.min(c.rowEnd, rowEnd);
        for (let r = from; r < to; r++) out[r - rowStart] = data[r - c.rowStart];
      },
    });
    return out;
  }

  /** Tile `t` of one column: its shard's footer and that column's chunk in the tile's row group. */
  async readTile(t: number, col: ObsColumnSchema, opts: { signal?: AbortSignal } = {}): Promise<Data> {
    const s = Math.floor(t / this.tilesPerFile);
    const meta = await this.footer(s, opts);
    this.checkColumn(s, meta, col);
    const { rowStart } = this.place(t, meta);
    const n = this.manifest.tile_cells[t]!;
    const [{ columnData }, rows] = await Promise.all([
      loadArrow(),
      this.readRows(s, meta, col, rowStart, rowStart + n, opts.signal),
    ]);
    return columnData(col, rows);
  }

  /** Every tile of one column (one Arrow `Data` per tile): per shard its footer, then the column's chunks. */
  async readColumn(col: ObsColumnSchema, opts: { signal?: AbortSignal } = {}): Promise<Data[]> {
    const nTiles = this.manifest.tile_cells.length;
    const nShards = Math.ceil(nTiles / this.tilesPerFile);
    const { columnData } = await loadArrow();
    const perShard = await Promise.all(
      Array.from({ length: nShards }, async (_, s) => {
        const meta = await this.footer(s, opts);
        this.checkColumn(s, meta, col);
        const rows = await this.readRows(s, meta, col, 0, Number(meta.num_rows), opts.signal);
        const out: Data[] = [];
        let at = 0;
        for (const g of meta.row_groups) {
          const n = Number(g.num_rows);
          out.push(columnData(col, rows.slice(at, at + n)));
          at += n;
        }
        return out;
      }),
    );
    return perShard.flat();
  }
}
