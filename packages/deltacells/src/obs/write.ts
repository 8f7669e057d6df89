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
import { type PlannedColumn, parquetPhysical } from "./plan.js";
import {
  OBS_SCHEMA_FORMAT,
  OBS_SCHEMA_KEY,
  OBS_SCHEMA_VERSION,
  type ObsColumnSchema,
  obsShardKey,
} from "./schema.js";

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

/** Writes obs row groups as tiles are cut; `finish` uploads the schema and returns the manifest fields. */
export class ObsWriter {
  readonly schemaText: string;
  private readonly parquetSchema: SchemaElement[];
  private writer: ParquetWriter | undefined;
  private bytes: ByteWriter | undefined;
  private groupsInShard = 0;
  /** Row groups are read and written one after the other, in tile order. */
  private chain: Promise<void> = Promise.resolve();
  private nextCell = 0;
  private readonly tileCells: number[] = [];
  private readonly shardBytes: number[] = [];
  private readonly shardSha: string[] = [];

  constructor(
    private readonly columns: PlannedColumn[],
    private readonly put: (key: string, value: Uint8Array) => Promise<void>,
    private readonly compress: Compress,
    readonly tilesPerFile: number,
  ) {
    this.schemaText = obsSchemaText(columns.map((c) => c.schema));
    this.parquetSchema = [
      { name: "schema", num_children: columns.length },
      ...columns.map((c) => parquetElement(c.schema)),
    ];
  }

  /**
   * The next tile's `nCells` rows as one row group, read and written after the previous tile's.
   * Returns the work up to the upload of a shard this tile completes (the caller awaits it with
   * the tiles in flight), or undefined; a failure of any tile surfaces there or in {@link finish}.
   */
  addTile(nCells: number): Promise<void> | undefined {
    const a = this.nextCell;
    const b = a + nCells;
    this.nextCell = b;
    this.tileCells.push(nCells);
    const closes = ++this.groupsInShard === this.tilesPerFile;
    if (closes) this.groupsInShard = 0;
    this.chain = this.chain.then(async () => {
      await this.writeGroup(a, b);
      if (closes) await this.closeShard();
    });
    // handled here so that a failure is not an unhandled rejection before finish awaits it
    this.chain.catch(() => {});
    return closes ? this.chain : undefined;
  }

  private async writeGroup(a: number, b: number): Promise<void> {
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
    const columnData = [];
    for (const c of this.columns) {
      columnData.push({
        name: c.schema.name,
        // biome-ignore lint/suspicious/noExplicitAny: hyparquet-writer's DecodedArray is a loose union
        data: (await c.rows(a, b)) as any,
        statistics: false,
        offsetIndex: false,
      });
    }
    void this.writer.write({ columnData, rowGroupSize: Math.max(1, b - a) });
  }

  private async closeShard(): Promise<void> {
    const writer = this.writer!;
    const bytes = this.bytes!;
    const index = this.shardBytes.length;
    this.writer = undefined;
    this.bytes = undefined;
    this.shardBytes.push(0);
    this.shardSha.push("");
    await writer.finish();
    const file = bytes.getBytes();
    this.shardBytes[index] = file.length;
    this.shardSha[index] = await sha256Hex(file);
    await this.put(obsShardKey(index), file);
  }

  /** Upload the last shard and the schema; the fields the manifest needs. */
  async finish(): Promise<ObsManifestFields> {
    await this.chain;
    if (this.writer) await this.closeShard();
    await this.put(OBS_SCHEMA_KEY, new TextEncoder().encode(this.schemaText));
    return {
      has_obs: true,
      obs_tiles_per_file: this.tilesPerFile,
      obs_shard_bytes: this.shardBytes,
      obs_shard_sha256: this.shardSha,
      obs_fingerprint: await obsFingerprint(this.schemaText, this.tileCells, this.shardSha),
    };
  }
}
