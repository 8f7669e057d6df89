/**
 * A dataset's obs: the schema, whole columns through the localizer (the Node entry's local Arrow
 * cache, or memory), and one tile's rows straight from its shard. The shards are read under the
 * dataset's version pin (see `ObsShards`).
 */
import type { ReadableStore } from "@deltacells/storage";
import type { Vector } from "apache-arrow";
import { loadArrow } from "../obs/arrow-load.js";
import { ObsFrame } from "../obs/frame.js";
import type { ObsLoadOptions, ObsLocalizer } from "../obs/localize.js";
import { ObsShards } from "../obs/read.js";
import type { ObsSchema } from "../obs/schema.js";
import type { DatasetManifest } from "./manifest.js";

/** The obs of one dataset; its shards' reader is made when first needed (it refuses a dataset without obs). */
export class DatasetObs {
  private shards: ObsShards | undefined;

  constructor(
    private readonly parts: {
      store: ReadableStore;
      manifest: DatasetManifest;
      url: string;
      openedAt: number | undefined;
      localizer: ObsLocalizer;
    },
  ) {}

  private reader(): ObsShards {
    const { store, manifest, url, openedAt } = this.parts;
    this.shards ??= new ObsShards({ store, manifest, url, openedAt });
    return this.shards;
  }

  /** `obs/schema.json`, checked against the fingerprint. */
  schema(opts: { signal?: AbortSignal } = {}): Promise<ObsSchema> {
    return this.reader().schema(opts);
  }

  /** The columns named (all by default), localized. */
  async frame(columns?: string[], opts: ObsLoadOptions = {}): Promise<ObsFrame> {
    const reader = this.reader();
    const wanted = await reader.columns(columns, opts);
    return new ObsFrame(await this.parts.localizer(reader, wanted, opts), this.parts.manifest.n_cells);
  }

  /** Tile `t`'s rows of the columns named (all by default): its shard's footer and one chunk per column. */
  async tile(
    t: number,
    columns?: string[],
    opts: { signal?: AbortSignal } = {},
  ): Promise<Record<string, Vector>> {
    const reader = this.reader();
    const wanted = await reader.columns(columns, opts);
    const [{ makeVector }, data] = await Promise.all([
      loadArrow(),
      Promise.all(wanted.map((c) => reader.readTile(t, c, opts))),
    ]);
    return Object.fromEntries(wanted.map((c, i) => [c.name, makeVector(data[i]!)]));
  }
}
