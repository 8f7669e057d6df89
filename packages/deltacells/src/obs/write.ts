/**
 * Writing the obs shards tile by tile: each tile's rows become one row group as soon as the tile
 * is cut, and a shard is uploaded as soon as its `obs_tiles_per_file` row groups are written, so
 * the writer holds at most one compressed shard, never the obs table as parquet.
 */
import type { KeyValue, SchemaElement } from "hyparquet";
import type { ByteWriter, ParquetWriter } from "hyparquet-writer";
import type { Compress } from "../dataset/var-table.js";
import { CONVERTER_NAME, CONVERTER_VERSION } from "../dataset/version.js";
import { loadParquetWriter } from "../parquet-load.js";
import { obsFingerprint, sha256Hex } from "./fingerprint.js";
import { parquetPhysical } from "./plan.js";
import { OBS_SCHEMA_FORMAT, OBS_SCHEMA_VERSION, type ObsColumnSchema, obsShardKey } from "./schema.js";

/** The manifest fields the obs writer produces. */
export interface ObsManifestFields {
  has_obs: true;
  obs_tiles_per_file: number;
  obs_shard_bytes: number[];
  obs_shard_sha256: string[];
  obs_fingerprint: string;
}

/** The parquet schema element of a column: its physical type and the annotation pyarrow maps to the Arrow type. */
export function parquetElement(c: ObsColumnSchema): SchemaElement {
  const t = c.arrow_type;
  const el: SchemaElement = {
    name: c.name,
    type: parquetPhysical(t),
    // Category codes are never null (-1 means missing); every other kind may hold nulls.
    repetition_type: c.kind === "category" ? "REQUIRED" : "OPTIONAL",
  };
  if (t === "string") {
    el.converted_type = "UTF8";
    el.logical_type = { type: "STRING" };
  }
  const int = /^(u?)int(8|16|32|64)$/.exec(t);
  // The legacy converted type carries the width: hyparquet-writer 0.17 serializes the INTEGER
  // logical type's bit width with the wrong thrift type, which pyarrow rejects.
  if (int) el.converted_type = `${int[1] ? "UINT" : "INT"}_${int[2]}` as SchemaElement["converted_type"];
  return el;
}

/** The text of `obs/schema.json` for these columns. */
export function obsSchemaText(columns: ObsColumnSchema[]): string {
  return `${JSON.stringify({ format: OBS_SCHEMA_FORMAT, version: OBS_SCHEMA_VERSION, columns }, null, 1)}\n`;
}

/** An obs shard a writer uploaded: its index, size and SHA-256. */
export interface WrittenShard {
  index: number;
  bytes: number;
  sha256: string;
}

/**
 * Writes obs row groups, one per tile, from tile `firstTile` on (the first tile of a shard), and
 * uploads each shard as soon as its `tilesPerFile` groups are written; `finish` uploads a last,
 * shorter shard. Groups are written one after the other, in the order they are added.
 */
export class ObsShardWriter {
  private readonly parquetSchema: SchemaElement[];
  private writer: ParquetWriter | undefined;
  private bytes: ByteWriter | undefined;
  private groupsInShard = 0;
  private nextShard: number;
  /** Row groups are written one after the other, in tile order. */
  private chain: Promise<void> = Promise.resolve();
  private readonly shards: WrittenShard[] = [];

  constructor(
    columns: ObsColumnSchema[],
    private readonly put: (key: string, value: Uint8Array) => Promise<void>,
    private readonly compress: Compress,
    readonly tilesPerFile: number,
    firstTile = 0,
  ) {
    if (firstTile % tilesPerFile !== 0)
      throw new RangeError(
        `obs shards start at a multiple of ${tilesPerFile} tiles, not at tile ${firstTile}`,
      );
    this.nextShard = firstTile / tilesPerFile;
    this.parquetSchema = [
      { name: "schema", num_children: columns.length },
      ...columns.map((c) => parquetElement(c)),
    ];
    this.names = columns.map((c) => c.name);
  }
  private readonly names: string[];

  /**
   * The next tile's row group: `data[k]` holds its `nCells` values of column k as hyparquet-writer
   * takes them. Resolves once the group (and the upload of a shard it completes) is done; a
   * failure surfaces there and in {@link finish}.
   */
  addGroup(nCells: number, data: ArrayLike<unknown>[]): Promise<void> {
    const closes = ++this.groupsInShard === this.tilesPerFile;
    if (closes) this.groupsInShard = 0;
    this.chain = this.chain.then(async () => {
      await this.writeGroup(nCells, data);
      if (closes) await this.closeShard();
    });
    // handled here so that a failure is not an unhandled rejection before finish awaits it
    this.chain.catch(() => {});
    return this.chain;
  }

  private async writeGroup(nCells: number, data: ArrayLike<unknown>[]): Promise<void> {
    if (!this.writer) {
      const { ByteWriter, ParquetWriter } = await loadParquetWriter();
      this.bytes = new ByteWriter();
      this.writer = new ParquetWriter({
        writer: this.bytes,
        // biome-ignore lint/suspicious/noExplicitAny: hyparquet-writer bundles its own copy of hyparquet's types
        schema: this.parquetSchema as any,
        codec: "ZSTD",
        compressors: { ZSTD: this.compress },
        statistics: false,
        kvMetadata: [] as KeyValue[],
        createdBy: `${CONVERTER_NAME} ${CONVERTER_VERSION}`,
      });
    }
    const columnData = this.names.map((name, k) => ({
      name,
      // biome-ignore lint/suspicious/noExplicitAny: hyparquet-writer's DecodedArray is a loose union
      data: data[k] as any,
      statistics: false,
      offsetIndex: false,
    }));
    void this.writer.write({ columnData, rowGroupSize: Math.max(1, nCells) });
  }

  private async closeShard(): Promise<void> {
    const writer = this.writer!;
    const bytes = this.bytes!;
    const index = this.nextShard++;
    this.writer = undefined;
    this.bytes = undefined;
    await writer.finish();
    const file = bytes.getBytes();
    this.shards.push({ index, bytes: file.length, sha256: await sha256Hex(file) });
    await this.put(obsShardKey(index), file);
  }

  /** Upload the last shard if it is open; every shard written, in order. */
  async finish(): Promise<WrittenShard[]> {
    await this.chain;
    if (this.writer) await this.closeShard();
    return this.shards;
  }
}

/** The manifest fields of obs with `schemaText` over tiles of `tileCells`, the shards' sizes and hashes given. */
export async function obsManifestFields(
  schemaText: string,
  tilesPerFile: number,
  tileCells: number[],
  shards: { bytes: number; sha256: string }[],
): Promise<ObsManifestFields> {
  const sha = shards.map((s) => s.sha256);
  return {
    has_obs: true,
    obs_tiles_per_file: tilesPerFile,
    obs_shard_bytes: shards.map((s) => s.bytes),
    obs_shard_sha256: sha,
    obs_fingerprint: await obsFingerprint(schemaText, tileCells, sha),
  };
}
