/** `inspect` and `validate` on a sporadik store: its description, and the deep check. */
import { type LayoutInfo, maximaOf, openArrayReader, type StoreInfo } from "@deltacells/sporadik/node";
import type { StatsStore } from "@deltacells/storage";
import { count } from "../args.js";
import type { CommandResult } from "../command.js";
import { formatCount } from "../format.js";

function layoutFacts(l: LayoutInfo) {
  return {
    path: l.path,
    indexed_axis: l.indexedAxis,
    index_order: l.indexOrder,
    encoding: l.encoding,
    encoding_version: l.encodingVersion,
    slices: l.slices,
    nnz: l.nnz,
    dtype: l.dtype,
    index_dtype: l.indexDtype,
    indptr_dtype: l.arrays.indptr.dtype,
    chunks: l.chunks,
    compressors: l.arrays.data.compressors.map((c) => c.name),
    byte_addressable: l.byteAddressable,
    checksums: l.checksums,
    has_maxima: l.hasMaxima,
  };
}

const n = (x: number) => formatCount(x);

/** What `describe` found, for `deltacells inspect` (no request beyond the description). */
export function inspectSporadik(store: StatsStore, info: StoreInfo): CommandResult {
  const layouts = [...info.layouts.values()].sort((a, b) => a.indexedAxis - b.indexedAxis);
  const first = layouts[0] as LayoutInfo;
  const cells = info.shape.reduce((a, b) => a * b, 1);
  const json = {
    url: store.url,
    format: "sporadik",
    spec: info.spec,
    shape: info.shape,
    nnz: first.nnz,
    density: cells ? first.nnz / cells : 0,
    dtype: first.dtype,
    indexed_axes: layouts.map((l) => l.indexedAxis),
    layouts: layouts.map(layoutFacts),
  };
  const lines = [
    `${store.url}: sporadik spec ${info.spec}`,
    `  shape        [${info.shape.join(", ")}], ${n(first.nnz)} nonzeros (density ${(json.density * 100).toFixed(2)}%), values ${first.dtype}`,
    `  layouts      along axes ${json.indexed_axes.join(", ")} (a slice along any other axis would be a scan)`,
    ...layouts.map((l) => {
      const f = layoutFacts(l);
      return `  ${l.path.padEnd(12)} ${f.encoding}, index_order [${f.index_order.join(", ")}], ${n(f.slices)} slices; indices ${f.index_dtype}, indptr ${f.indptr_dtype}; chunks data ${n(f.chunks.data)}, indices ${n(f.chunks.indices)}, indptr ${n(f.chunks.indptr)} (${f.compressors.join("+") || "uncompressed"}); byte-addressable ${f.byte_addressable ? "yes" : "no"}; checksums ${f.checksums ? "yes" : "no"}; maxima ${f.has_maxima ? "yes" : "no"}`;
    }),
  ];
  return { text: lines.join("\n"), json, store };
}

interface Problem {
  object: string;
  tag: string;
  message: string;
}

/** The sum of every value, as a double (exact for the integer counts this CLI writes). */
function total(values: ArrayLike<number | bigint>): number {
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += Number(values[i]);
  return sum;
}

/**
 * Every layout read whole, one at a time: `indptr` from 0 to nnz and never decreasing, within each
 * slice the indices strictly increasing and inside the axes they ravel over (so a damaged chunk, or
 * a missing one zarr would read as zeros, is named), the stored maxima equal to the values' own, and the layouts
 * holding as many values with the same sum. Problems are listed; only an unreadable store throws.
 */
export async function validateSporadik(store: StatsStore, info: StoreInfo): Promise<CommandResult> {
  const array = await openArrayReader(store, { checkIndices: true });
  const problems: Problem[] = [];
  const sums = new Map<number, { nnz: number; sum: number }>();
  for (const axis of array.indexedAxes) {
    const l = info.layouts.get(axis) as LayoutInfo;
    const reader = array.along(axis);
    const where = (name: string) => `${store.url}/${l.path}/${name}`;
    let layout: Awaited<ReturnType<typeof reader.readLayout>>;
    try {
      layout = await reader.readLayout();
    } catch (err) {
      const e = err as Error & { _tag?: string; object?: string };
      // The chunk the reader named, else the layout's indptr (what layoutOver checks).
      const object = e.object ? `${store.url}/${e.object.replace(/^\//, "")}` : where("indptr");
      problems.push({ object, tag: e._tag ?? e.name, message: e.message });
      continue;
    }
    const indptr = layout.indptr;
    for (let i = 0; i < indptr.length - 1; i++) {
      if (Number(indptr[i + 1]) < Number(indptr[i])) {
        problems.push({
          object: where("indptr"),
          tag: "LayoutError",
          message: `indptr decreases at slice ${i} (${indptr[i]} then ${indptr[i + 1]}): the runs would overlap and slices would return other slices' values`,
        });
        break;
      }
    }
    if (l.hasMaxima) {
      const stored = await reader.maxima();
      const own = maximaOf(layout.data, indptr);
      const same = (v: number | bigint, w: number | bigint | undefined) =>
        v === w || (Number.isNaN(v) && Number.isNaN(w));
      const at = Array.prototype.findIndex.call(stored, (v: number | bigint, i: number) => !same(v, own[i]));
      if (at >= 0) {
        problems.push({
          object: where("maxima"),
          tag: "LayoutError",
          message: `maxima[${at}] is ${stored[at]}, but the largest absolute value of slice ${at} is ${own[at]}`,
        });
      }
    }
    sums.set(axis, { nnz: layout.data.length, sum: total(layout.data) });
  }
  // The layouts are one array: as many values, with the same sum (up to rounding for floats).
  const [firstAxis, first] = [...sums][0] ?? [];
  for (const [axis, { nnz, sum }] of sums) {
    if (first === undefined || axis === firstAxis) continue;
    if (nnz !== first.nnz || Math.abs(sum - first.sum) > 1e-9 * Math.max(1, Math.abs(first.sum))) {
      problems.push({
        object: `${store.url}/layouts/axis${axis}/data`,
        tag: "LayoutError",
        message: `axis ${axis}'s layout holds ${nnz} values summing to ${sum}, axis ${firstAxis}'s ${first.nnz} summing to ${first.sum}: the layouts hold different arrays`,
      });
    }
  }
  const nnz = (info.layouts.values().next().value as LayoutInfo).nnz;
  const valid = problems.length === 0;
  const text = valid
    ? `${store.url}: valid sporadik store (${count(info.layouts.size, "layout")} along ${info.layouts.size === 1 ? "axis" : "axes"} ${array.indexedAxes.join(", ")}, shape [${info.shape.join(", ")}], ${n(nnz)} nonzeros)`
    : [
        `${store.url}: INVALID, ${count(problems.length, "problem")}:`,
        ...problems.map((p) => `  ${p.object}: [${p.tag}] ${p.message}`),
      ].join("\n");
  return {
    text,
    json: { url: store.url, format: "sporadik", valid, layouts_checked: sums.size, nnz, problems },
    store,
    exitCode: valid ? 0 : 1,
  };
}
