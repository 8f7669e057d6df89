/**
 * One obs schema for many inputs (spec: "Obs"; the vocabulary of a category column is global).
 * Columns are taken in the order they are first seen; a column an input lacks is null there (code
 * -1 for categories); categories get one vocabulary in first-seen order; numeric types are
 * promoted as numpy does (an int and a float column becomes float); a categorical and a string
 * column becomes string. Anything else (a string and a number, a category and a bool) is a real
 * conflict, refused with both inputs named. Embeddings are kept where every input has them, or
 * everywhere with nulls filled in (`obsmFill`). Works on the scans only.
 */
import { DeltacellsError } from "../errors.js";
import { embeddingColumnName } from "../obs/plan.js";
import { type ObsMetadata, UnknownObsExclude } from "../obs/prepare.js";
import {
  categoryCodeType,
  DEFAULT_MAX_CATEGORIES,
  type ObsColumnSchema,
  type ObsKind,
  type ObsNumericType,
} from "../obs/schema.js";
import { promoteNumeric } from "./promote.js";
import type { ColumnScan, ObsScan } from "./scan.js";

/** An input as the obs merge sees it. */
export interface ObsInput {
  location: string;
  obs: ObsScan | null;
}

/** Where a column's values come from in each input. */
export type AtlasColumnRole =
  | { role: "index" }
  | { role: "column" }
  | { role: "source" }
  | { role: "embedding"; key: string; j: number };

/** One column of an atlas's obs: its schema entry and where each input's values come from. */
export type AtlasObsColumn = { schema: ObsColumnSchema } & AtlasColumnRole;

export interface AtlasObs {
  columns: AtlasObsColumn[];
  metadata: ObsMetadata;
  /** What was left out and why (embeddings not in every input, orders lost), for the user. */
  notes: string[];
}

export interface ObsMergeOptions {
  /** Write no obs at all. */
  skip?: boolean;
  exclude?: string[];
  /** "auto" or the obsm keys asked for by name. */
  obsm?: "auto" | string[];
  /** Keep embeddings some inputs lack, null for their cells. */
  obsmFill?: boolean;
  maxCategories?: number;
  /** The name of the column naming each cell's input, or null for none. */
  sourceColumn?: string | null;
  /** The value of that column for each input. */
  sourceNames?: string[];
}

/** Two inputs' columns of one name that no column can hold together. */
export class ConflictingObsColumn extends DeltacellsError {
  constructor(
    message: string,
    options: { object: string; column: string; inputs: [string, string]; kinds: [string, string] },
  ) {
    super(message, {
      tag: "InvalidInput",
      object: options.object,
      field: "obs",
      expected: { exclude: [options.column] },
      found: { column: options.column, inputs: options.inputs, kinds: options.kinds },
    });
    this.column = options.column;
    this.inputs = options.inputs;
    this.kinds = options.kinds;
  }
  readonly column: string;
  readonly inputs: [string, string];
  readonly kinds: [string, string];

  /** The message, with `skip` saying how to leave the column out (a CLI names its flag). */
  static describe(column: string, a: [string, string], b: [string, string], skip: string): string {
    return `obs column ${JSON.stringify(column)} is ${a[1]} in ${a[0]} but ${b[1]} in ${b[0]}: no column holds both. ${skip}, or convert it in one of them (in Python) to the other's type first.`;
  }
}

const kindText = (c: ColumnScan) =>
  c.kind === "numeric" ? `numeric (${c.arrowType})` : c.kind === "category" ? "categorical" : c.kind;

/** One input's column of a name: where, and what it is there. */
export interface Seen {
  location: string;
  scan: ColumnScan;
}

/**
 * The schema of one table column over the inputs that have it (`uses`, in input order); a
 * {@link ConflictingObsColumn} when no column holds them all.
 */
export function mergeColumn(name: string, uses: Seen[], maxCategories: number): ObsColumnSchema {
  const first = uses[0]!;
  let kind: ObsKind = first.scan.kind;
  let numeric = first.scan.kind === "numeric" ? (first.scan.arrowType as ObsNumericType) : undefined;
  const by = first;
  for (const u of uses.slice(1)) {
    const k = u.scan.kind;
    const text = (kind === "category" || kind === "string") && (k === "category" || k === "string");
    if (text) {
      if (k === "string") kind = "string";
      continue;
    }
    const promoted =
      kind === "numeric" && k === "numeric"
        ? promoteNumeric(numeric!, u.scan.arrowType as ObsNumericType)
        : undefined;
    if (promoted !== undefined) {
      numeric = promoted;
      continue;
    }
    if (kind === k && k === "bool") continue;
    const conflict =
      promoted === undefined && kind === "numeric" && k === "numeric" ? "no type holds both" : "";
    throw new ConflictingObsColumn(
      ConflictingObsColumn.describe(
        name,
        [by.location, kindText(by.scan)],
        [u.location, kindText(u.scan)],
        `Leave it out with the obs exclude option${conflict ? ` (${conflict})` : ""}`,
      ),
      {
        object: u.location,
        column: name,
        inputs: [by.location, u.location],
        kinds: [kindText(by.scan), kindText(u.scan)],
      },
    );
  }
  if (kind === "numeric") return { name, kind, arrow_type: numeric!, categories: null };
  if (kind === "bool") return { name, kind, arrow_type: "bool", categories: null };
  if (kind === "category") {
    const vocabulary: string[] = [];
    const seen = new Set<string>();
    for (const u of uses) {
      for (const c of u.scan.categories!) {
        if (!seen.has(c)) {
          seen.add(c);
          vocabulary.push(c);
        }
      }
    }
    if (vocabulary.length <= maxCategories)
      return { name, kind, arrow_type: categoryCodeType(vocabulary.length), categories: vocabulary };
  }
  return { name, kind: "string", arrow_type: "string", categories: null };
}

const sameList = (a: string[] | null, b: string[] | null) =>
  a !== null && b !== null && a.length === b.length && a.every((x, i) => x === b[i]);

/** The embeddings kept: every input's (or, with `fill`, any input's) of one width. */
function mergeEmbeddings(
  scans: ObsInput[],
  opts: ObsMergeOptions,
  notes: string[],
): { key: string; width: number }[] {
  const byKey = new Map<string, { width: number; inputs: number[] }>();
  const widthClash = new Set<string>();
  scans.forEach((s, i) => {
    for (const e of s.obs?.embeddings ?? []) {
      const known = byKey.get(e.key);
      if (known === undefined) byKey.set(e.key, { width: e.width, inputs: [i] });
      else if (known.width !== e.width) widthClash.add(e.key);
      else known.inputs.push(i);
    }
  });
  const named = Array.isArray(opts.obsm);
  const kept: { key: string; width: number }[] = [];
  for (const [key, { width, inputs }] of byKey) {
    const lacking = scans.filter((_, i) => !inputs.includes(i)).map((s) => s.location);
    if (widthClash.has(key)) {
      const message = `obsm ${JSON.stringify(key)} has different widths in different inputs, so it cannot be one set of columns`;
      if (named)
        throw new DeltacellsError(`${message}; leave it out of the obsm option`, {
          tag: "InvalidInput",
          field: "obsm",
          found: key,
        });
      notes.push(`${message}: left out`);
      continue;
    }
    if (lacking.length > 0 && !opts.obsmFill) {
      const message = `obsm ${JSON.stringify(key)} is missing from ${lacking.length} of the ${scans.length} inputs (${lacking.slice(0, 3).join(", ")}${lacking.length > 3 ? ", ..." : ""})`;
      if (named)
        throw new DeltacellsError(
          `${message}; pass the obsm fill option to keep it with nulls for their cells, or leave it out of the obsm option`,
          {
            tag: "InvalidInput",
            object: lacking[0],
            field: "obsm",
            found: key,
          },
        );
      notes.push(`${message}: left out (the obsm fill option keeps it, null for their cells)`);
      continue;
    }
    kept.push({ key, width });
  }
  return kept;
}

/** The obs of an atlas of `scans`, or undefined when it has none. */
export function mergeObs(scans: ObsInput[], opts: ObsMergeOptions = {}): AtlasObs | undefined {
  const sourceColumn = opts.sourceColumn ?? null;
  if (opts.skip) return undefined;
  const withObs = scans.filter((s) => s.obs !== null);
  if (withObs.length === 0 && sourceColumn === null) return undefined;
  const maxCategories = opts.maxCategories ?? DEFAULT_MAX_CATEGORIES;
  const notes: string[] = [];
  const exclude = opts.exclude ?? [];
  if (scans.length > 1 && exclude.length > 0) {
    const available = [...new Set(withObs.flatMap((s) => s.obs!.available))];
    const unknown = exclude.filter((n) => !available.includes(n));
    if (unknown.length > 0) throw UnknownObsExclude.of(`the ${scans.length} inputs`, unknown, available);
  }
  for (const key of Array.isArray(opts.obsm) ? opts.obsm : []) {
    if (!withObs.some((s) => s.obs!.embeddings.some((e) => e.key === key)))
      throw new DeltacellsError(
        `no input has an obsm entry ${JSON.stringify(key)}; leave it out of the obsm option`,
        {
          tag: "InvalidInput",
          field: "obsm",
          found: key,
        },
      );
  }
  const head = withObs[0]?.obs;
  const indexName = head ? (head.indexName ?? head.indexColumn) : "obs_names";
  const columns: AtlasObsColumn[] = [
    { schema: { name: indexName, kind: "string", arrow_type: "string", categories: null }, role: "index" },
  ];
  const uses = new Map<string, Seen[]>();
  for (const s of withObs) {
    for (const c of s.obs!.columns) {
      const list = uses.get(c.name) ?? [];
      if (list.length === 0) uses.set(c.name, list);
      list.push({ location: s.location, scan: c });
    }
  }
  const ordered: string[] = [];
  const nullable: string[] = [];
  const textFrom: Record<string, string> = {};
  for (const [name, list] of uses) {
    columns.push({ schema: mergeColumn(name, list, maxCategories), role: "column" });
    const allOrdered = list.every((u) => u.scan.ordered);
    const sameOrder =
      list.length === 1 || list.every((u) => sameList(u.scan.categories, list[0]!.scan.categories));
    if (allOrdered && sameOrder) ordered.push(name);
    else if (list.some((u) => u.scan.ordered))
      notes.push(
        `obs column ${JSON.stringify(name)}: its categories are ordered in some inputs only, or in different orders: stored unordered`,
      );
    if (list.some((u) => u.scan.nullable)) nullable.push(name);
    const from = list.find((u) => u.scan.textFrom)?.scan.textFrom;
    if (from !== undefined && columns.at(-1)!.schema.kind === "string") textFrom[name] = from;
  }
  if (sourceColumn !== null) {
    const names = opts.sourceNames ?? scans.map((s) => s.location);
    const schema: ObsColumnSchema =
      names.length <= maxCategories
        ? {
            name: sourceColumn,
            kind: "category",
            arrow_type: categoryCodeType(names.length),
            categories: [...names],
          }
        : { name: sourceColumn, kind: "string", arrow_type: "string", categories: null };
    columns.push({ schema, role: "source" });
  }
  const embeddings = mergeEmbeddings(scans, opts, notes);
  for (const { key, width } of embeddings) {
    for (let j = 0; j < width; j++) {
      columns.push({
        schema: { name: embeddingColumnName(key, j), kind: "numeric", arrow_type: "float", categories: null },
        role: "embedding",
        key,
        j,
      });
    }
  }
  const taken = new Map<string, AtlasObsColumn>();
  for (const c of columns) {
    const before = taken.get(c.schema.name);
    if (before !== undefined) {
      const what = (x: AtlasObsColumn) =>
        x.role === "index"
          ? "the index"
          : x.role === "source"
            ? "the source column"
            : x.role === "embedding"
              ? `obsm ${x.key}`
              : "a column";
      throw new DeltacellsError(
        `two obs columns would be named ${JSON.stringify(c.schema.name)} (${what(before)} and ${what(c)}); ${
          c.role === "source" || before.role === "source"
            ? "name the source column otherwise (the source column option)"
            : "rename one in the input, or exclude it"
        }`,
        { tag: "InvalidInput", field: c.schema.name },
      );
    }
    taken.set(c.schema.name, c);
  }
  return {
    columns,
    metadata: {
      obs_index: indexName,
      obs_index_name: head ? head.indexName : null,
      obs_embeddings: Object.fromEntries(embeddings.map((e) => [e.key, e.width])),
      obs_ordered: ordered,
      obs_nullable: nullable,
      ...(Object.keys(textFrom).length > 0 ? { obs_text_from: textFrom } : {}),
    },
    notes,
  };
}
