/**
 * The atlas build's objects in a store: scan records written and read back, the plan with the
 * gene files it fixes (`gene_order.npy`, `var_names.txt`, `var.parquet`), and the plan read by
 * tasks and `finalize`.
 */
import type { ReadableStore, WritableStore } from "@deltacells/storage";
import { GENE_ORDER_KEY, MANIFEST_KEY, VAR_NAMES_KEY, VAR_TABLE_KEY } from "../dataset/manifest.js";
import { encodeNpyInt32 } from "../dataset/npy.js";
import type { ColumnTable } from "../dataset/source.js";
import type { Compress } from "../dataset/var-table.js";
import { DeltacellsError } from "../errors.js";
import { PLAN_KEY, scanKey, scanVarKey } from "./layout.js";
import { type AtlasPlan, encodePlan, parsePlan, type ScanSource } from "./plan.js";
import {
  decodeScanSummary,
  decodeScanVar,
  encodeScan,
  type ScanContext,
  type ScanSummary,
} from "./records.js";
import type { InputScan } from "./scan.js";

type Put = (key: string, value: Uint8Array) => Promise<void>;

/** Write the scan record of one input. */
export async function writeScan(
  store: WritableStore,
  scan: InputScan,
  ctx: ScanContext,
  signal?: AbortSignal,
): Promise<void> {
  const { summary, var: table } = encodeScan(scan, ctx);
  await store.set(scanVarKey(ctx.input), table, { signal });
  await store.set(scanKey(ctx.input), summary, { signal });
}

/** A scan record that is missing, or belongs to another build. */
export interface ScanProblem {
  input: number;
  problem: "missing" | "other";
}

/** The scans of `count` inputs recorded under `store` for the build `digest`; each read when asked. */
export function storedScans(
  store: ReadableStore & { url?: string },
  count: number,
  digest: string,
): ScanSource & { check(): Promise<ScanProblem[]> } {
  const where = (key: string) => `${store.url ?? ""}${store.url ? "/" : ""}${key}`;
  const read = async (i: number) => {
    const bytes = await store.get(scanKey(i));
    if (bytes === undefined) return undefined;
    return decodeScanSummary(bytes, where(scanKey(i)));
  };
  return {
    count,
    async check() {
      const problems: ScanProblem[] = [];
      for (let i = 0; i < count; i++) {
        const r = await read(i);
        if (r === undefined) problems.push({ input: i, problem: "missing" });
        else if (r.ctx.digest !== digest || r.ctx.input !== i || r.ctx.inputs !== count)
          problems.push({ input: i, problem: "other" });
      }
      return problems;
    },
    async summary(i: number): Promise<ScanSummary> {
      const r = await read(i);
      if (r === undefined || r.ctx.digest !== digest) {
        throw new DeltacellsError(
          `${where(scanKey(i))}: input ${i} has ${r ? "a scan of other inputs or options" : "no scan record"}; scan it (again)`,
          {
            tag: "NotFound",
            object: where(scanKey(i)),
          },
        );
      }
      return r.summary;
    },
    async varTable(i: number): Promise<ColumnTable> {
      const bytes = await store.get(scanVarKey(i));
      if (bytes === undefined)
        throw new DeltacellsError(`${where(scanVarKey(i))} is missing; scan input ${i} again`, {
          tag: "NotFound",
          object: where(scanVarKey(i)),
        });
      return decodeScanVar(bytes, where(scanVarKey(i)), digest);
    },
  };
}

/**
 * Write the plan and the gene files it fixes. An existing manifest is deleted first: from here on
 * the prefix reads as an unfinished dataset, never as an old one over new objects.
 */
export async function writePlan(
  store: WritableStore,
  plan: AtlasPlan,
  varTable: ColumnTable,
  compress: Compress,
  put: Put = (key, value) => store.set(key, value),
): Promise<void> {
  await store.delete(MANIFEST_KEY);
  const order = Int32Array.from(plan.genes.order);
  await put(GENE_ORDER_KEY, encodeNpyInt32(order));
  const names = Array.from(order, (u) => varTable.index[u]!);
  const badName = names.findIndex((n) => /[\r\n]/.test(n));
  if (badName >= 0)
    throw new DeltacellsError(
      `gene name ${JSON.stringify(names[badName])} contains a line break, which var_names.txt cannot hold`,
      { tag: "InvalidInput", field: "var_names", found: names[badName] },
    );
  await put(VAR_NAMES_KEY, new TextEncoder().encode(names.length ? `${names.join("\n")}\n` : ""));
  // var.parquet is written through apache-arrow: loaded by a writer, not by every page that reads.
  const { encodeVarTable } = await import("../dataset/var-table.js");
  await put(VAR_TABLE_KEY, encodeVarTable(varTable, order, compress));
  await store.set(PLAN_KEY, encodePlan(plan));
}

/** The plan under `store`, or undefined when there is none. */
export async function readPlan(
  store: ReadableStore & { url?: string },
  signal?: AbortSignal,
): Promise<AtlasPlan | undefined> {
  const bytes = await store.get(PLAN_KEY, { signal });
  if (bytes === undefined) return undefined;
  return parsePlan(bytes, `${store.url ?? ""}${store.url ? "/" : ""}${PLAN_KEY}`);
}
