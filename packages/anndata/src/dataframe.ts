/**
 * AnnData data frames (obs, var, dataframe obsm entries) as {@link ColumnTable}s: the current
 * group encoding (column-order, categorical, nullable-*) and the pre-0.7 compound dataset.
 * Browser-safe.
 */

import { InputError, objectIn, UnsupportedColumnsError } from "./errors.js";
import { chunkWindowed } from "./row-window.js";
import { attrString, joinPath, type Tree, type TreeArray, type TreeGroup, toNumbers } from "./tree.js";
import type {
  ColumnTable,
  ColumnTableReader,
  NumericValues,
  TableColumn,
  TableColumnReader,
} from "./types.js";

/**
 * Reads obs or var: the current group encoding or the legacy compound dataset. Columns named in
 * `exclude` are not read; columns of an encoding or element type that has no {@link TableColumn}
 * (datetimes, nested frames, complex numbers ...) are refused together, by name, in one
 * {@link UnsupportedColumnsError}.
 */
export async function readDataFrame(
  tree: Tree,
  path: string,
  nRows: number,
  exclude: ReadonlySet<string> = new Set(),
): Promise<ColumnTable> {
  const loc = tree.location;
  const node = await tree.get(path);
  if (node === undefined) {
    // anndata allows a missing raw/var only in broken files; an absent obs/var means no names
    return { indexName: null, index: Array.from({ length: nRows }, (_, i) => String(i)), columns: [] };
  }
  const table =
    node.kind === "array" ? await legacyFrame(tree, node, exclude) : await groupFrame(tree, node, exclude);
  if (table.index.length !== nRows) {
    throw new InputError(
      `${loc}: ${path} has ${table.index.length} rows, but the matrix has ${nRows} along that axis.`,
      { tag: "MalformedInput", object: objectIn(loc, path) },
    );
  }
  return table;
}

async function groupFrame(tree: Tree, group: TreeGroup, exclude: ReadonlySet<string>): Promise<ColumnTable> {
  const loc = tree.location;
  const attrs = await group.attrs();
  const indexKey = attrString(attrs._index) ?? "_index";
  const indexNode = await tree.get(joinPath(group.path, indexKey));
  if (indexNode?.kind !== "array") {
    throw new InputError(`${loc}: data frame ${group.path} has no index array ${indexKey}.`, {
      tag: "MalformedInput",
      object: objectIn(loc, group.path),
    });
  }
  const index = await indexNode.readStrings();
  const names = columnOrder(attrs["column-order"]);
  const columns: TableColumn[] = [];
  const unsupported: string[] = [];
  for (const name of names) {
    if (exclude.has(name)) continue;
    try {
      const legacy = await legacyCategorical(tree, group.path, name);
      columns.push(legacy ?? (await readColumn(tree, joinPath(group.path, name), name)));
    } catch (err) {
      if (!(err instanceof InputError) || err._tag !== "Unsupported") throw err;
      unsupported.push(name);
    }
  }
  if (unsupported.length > 0) throw UnsupportedColumnsError.of(loc, group.path, unsupported);
  return { indexName: indexKey === "_index" ? null : indexKey, index, columns };
}

/**
 * anndata 0.7 (data frame encoding 0.1.0) stored a categorical column as its codes, with the
 * categories in `<frame>/__categories/<name>` (and `ordered` as an attribute there).
 */
async function legacyCategorical(tree: Tree, frame: string, name: string): Promise<TableColumn | undefined> {
  const cats = await tree.get(joinPath(frame, `__categories/${name}`));
  const codes = await tree.get(joinPath(frame, name));
  if (cats?.kind !== "array" || codes?.kind !== "array" || codes.element === "string") return undefined;
  const categories =
    cats.element === "string" ? await cats.readStrings() : Array.from(toNumbers(await cats.read()), String);
  const ordered = Boolean((await cats.attrs()).ordered);
  return {
    name,
    kind: "category",
    codes: Int32Array.from(toNumbers(await codes.read())),
    categories,
    ordered,
  };
}

async function readColumn(tree: Tree, path: string, name: string): Promise<TableColumn> {
  const loc = tree.location;
  const node = await tree.get(path);
  if (node === undefined) {
    throw new InputError(`${loc}: column ${path} is listed in column-order but missing.`, {
      tag: "MalformedInput",
      object: objectIn(loc, path),
    });
  }
  if (node.kind === "array") return arrayColumn(node, name);
  const enc = attrString((await node.attrs())["encoding-type"]);
  const child = async (n: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, n));
    if (a?.kind !== "array") {
      throw new InputError(`${loc}: ${enc} column ${path} has no ${n} array.`, {
        tag: "MalformedInput",
        object: objectIn(loc, path),
      });
    }
    return a;
  };
  if (enc === "categorical") {
    const codesRaw = toNumbers(await (await child("codes")).read());
    const catNode = await child("categories");
    const categories =
      catNode.element === "string"
        ? await catNode.readStrings()
        : Array.from(toNumbers(await catNode.read()), String);
    const ordered = Boolean((await node.attrs()).ordered);
    return { name, kind: "category", codes: Int32Array.from(codesRaw), categories, ordered };
  }
  if (enc === "nullable-integer" || enc === "nullable-boolean" || enc === "nullable-string-array") {
    const values = await child("values");
    const mask = Uint8Array.from(toNumbers(await (await child("mask")).read()));
    if (enc === "nullable-string-array") {
      const strings = await values.readStrings();
      return { name, kind: "string", values: strings.map((s, i) => (mask[i] ? null : s)), nullable: true };
    }
    const v = await values.read();
    if (enc === "nullable-boolean")
      return { name, kind: "bool", values: Uint8Array.from(toNumbers(v)), nulls: mask, nullable: true };
    return { name, kind: "numeric", values: v, nulls: mask, nullable: true };
  }
  throw new InputError(
    `${loc}: column ${path} has encoding ${JSON.stringify(enc ?? null)}, which is not supported.`,
    { tag: "Unsupported", object: objectIn(loc, path) },
  );
}

async function arrayColumn(a: TreeArray, name: string): Promise<TableColumn> {
  if (a.element === "other" || a.element === "compound" || a.shape.length !== 1) {
    throw new InputError(
      `${a.path} has an element type or shape (${a.element}, ${JSON.stringify(a.shape)}) no table column holds.`,
      { tag: "Unsupported" },
    );
  }
  if (a.element === "string") return { name, kind: "string", values: await a.readStrings() };
  const v = await a.read();
  if (a.element === "bool") return { name, kind: "bool", values: Uint8Array.from(toNumbers(v)) };
  return { name, kind: "numeric", values: v };
}

/** Pre-0.7 anndata: a compound dataset; categorical columns keep codes, categories in uns. */
async function legacyFrame(tree: Tree, a: TreeArray, exclude: ReadonlySet<string>): Promise<ColumnTable> {
  const loc = tree.location;
  if (!a.fields) {
    throw new InputError(`${loc}: ${a.path} is neither a data frame group nor a record array.`, {
      tag: "MalformedInput",
      object: objectIn(loc, a.path),
    });
  }
  const cols = await a.readCompound();
  const index = cols.get("index");
  if (!Array.isArray(index)) {
    throw new InputError(`${loc}: legacy data frame ${a.path} has no string field "index".`, {
      tag: "MalformedInput",
      object: objectIn(loc, a.path),
    });
  }
  const columns: TableColumn[] = [];
  for (const f of a.fields) {
    if (f.name === "index" || f.shape || exclude.has(f.name)) continue;
    const v = cols.get(f.name);
    if (v === undefined) continue;
    if (Array.isArray(v)) {
      columns.push({ name: f.name, kind: "string", values: v });
      continue;
    }
    const cats = await tree.get(`uns/${f.name}_categories`);
    if (cats?.kind === "array" && (f.kind === "int" || f.kind === "uint")) {
      const categories =
        cats.element === "string"
          ? await cats.readStrings()
          : Array.from(toNumbers(await cats.read()), String);
      columns.push({
        name: f.name,
        kind: "category",
        codes: Int32Array.from(toNumbers(v)),
        categories,
        ordered: false,
      });
    } else if (f.kind === "bool") {
      columns.push({ name: f.name, kind: "bool", values: Uint8Array.from(toNumbers(v as NumericValues)) });
    } else {
      columns.push({ name: f.name, kind: "numeric", values: v });
    }
  }
  return { indexName: "index", index, columns };
}

/**
 * A data frame in the current group encoding read by row range: the categories and the layout are
 * read here, the rows of a column only when asked for (h5ad reads a range without the rest; zarr
 * keeps the chunks under the last range, so increasing ranges decode each chunk once).
 * Undefined for frames this cannot read by range (absent, or the pre-0.7 compound dataset): read
 * those whole with {@link readDataFrame}. Refuses what {@link readDataFrame} refuses.
 */
export async function frameReader(
  tree: Tree,
  path: string,
  nRows: number,
  exclude: ReadonlySet<string> = new Set(),
): Promise<ColumnTableReader | undefined> {
  const loc = tree.location;
  const group = await tree.get(path);
  if (group?.kind !== "group") return undefined;
  const rows = (a: TreeArray): TreeArray => {
    if (a.shape.length !== 1 || a.shape[0] !== nRows) {
      throw new InputError(
        `${loc}: ${a.path} has shape ${JSON.stringify(a.shape)}, but the matrix has ${nRows} rows along that axis.`,
        { tag: "MalformedInput", object: objectIn(loc, a.path) },
      );
    }
    return chunkWindowed(a);
  };
  const attrs = await group.attrs();
  const indexKey = attrString(attrs._index) ?? "_index";
  const indexNode = await tree.get(joinPath(group.path, indexKey));
  if (indexNode?.kind !== "array" || indexNode.element !== "string") return undefined;
  const index = rows(indexNode);
  const names = columnOrder(attrs["column-order"]);
  const columns: TableColumnReader[] = [];
  const unsupported: string[] = [];
  for (const name of names) {
    if (exclude.has(name)) continue;
    try {
      columns.push(await columnReader(tree, group.path, name, rows));
    } catch (err) {
      if (!(err instanceof InputError) || err._tag !== "Unsupported") throw err;
      unsupported.push(name);
    }
  }
  if (unsupported.length > 0) throw UnsupportedColumnsError.of(loc, group.path, unsupported);
  return {
    indexName: indexKey === "_index" ? null : indexKey,
    index: (a, b) => index.readStrings(a, b),
    columns,
  };
}

const codesOf = (a: TreeArray) => async (s: number, e: number) =>
  Int32Array.from(toNumbers(await a.read(s, e)));

async function columnReader(
  tree: Tree,
  frame: string,
  name: string,
  rows: (a: TreeArray) => TreeArray,
): Promise<TableColumnReader> {
  const loc = tree.location;
  const path = joinPath(frame, name);
  const legacyCats = await tree.get(joinPath(frame, `__categories/${name}`));
  const node = await tree.get(path);
  if (legacyCats?.kind === "array" && node?.kind === "array" && node.element !== "string") {
    const categories =
      legacyCats.element === "string"
        ? await legacyCats.readStrings()
        : Array.from(toNumbers(await legacyCats.read()), String);
    const ordered = Boolean((await legacyCats.attrs()).ordered);
    return { name, kind: "category", categories, ordered, read: codesOf(rows(node)) };
  }
  if (node === undefined) {
    throw new InputError(`${loc}: column ${path} is listed in column-order but missing.`, {
      tag: "MalformedInput",
      object: objectIn(loc, path),
    });
  }
  if (node.kind === "array") {
    if (node.element === "other" || node.element === "compound" || node.shape.length !== 1) {
      throw new InputError(
        `${node.path} has an element type or shape (${node.element}, ${JSON.stringify(node.shape)}) no table column holds.`,
        { tag: "Unsupported" },
      );
    }
    const a = rows(node);
    if (a.element === "string") return { name, kind: "string", read: (s, e) => a.readStrings(s, e) };
    if (a.element === "bool")
      return {
        name,
        kind: "bool",
        read: async (s, e) => ({ values: Uint8Array.from(toNumbers(await a.read(s, e))) }),
      };
    return { name, kind: "numeric", read: async (s, e) => ({ values: await a.read(s, e) }) };
  }
  const enc = attrString((await node.attrs())["encoding-type"]);
  const child = async (n: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, n));
    if (a?.kind !== "array") {
      throw new InputError(`${loc}: ${enc} column ${path} has no ${n} array.`, {
        tag: "MalformedInput",
        object: objectIn(loc, path),
      });
    }
    return a;
  };
  if (enc === "categorical") {
    const catNode = await child("categories");
    const categories =
      catNode.element === "string"
        ? await catNode.readStrings()
        : Array.from(toNumbers(await catNode.read()), String);
    const ordered = Boolean((await node.attrs()).ordered);
    return { name, kind: "category", categories, ordered, read: codesOf(rows(await child("codes"))) };
  }
  if (enc === "nullable-integer" || enc === "nullable-boolean" || enc === "nullable-string-array") {
    const values = rows(await child("values"));
    const maskNode = rows(await child("mask"));
    const mask = async (s: number, e: number) => Uint8Array.from(toNumbers(await maskNode.read(s, e)));
    if (enc === "nullable-string-array") {
      return {
        name,
        kind: "string",
        nullable: true,
        read: async (s, e) => {
          const m = await mask(s, e);
          return (await values.readStrings(s, e)).map((x, i) => (m[i] ? null : x));
        },
      };
    }
    if (enc === "nullable-boolean") {
      return {
        name,
        kind: "bool",
        nullable: true,
        read: async (s, e) => ({
          values: Uint8Array.from(toNumbers(await values.read(s, e))),
          nulls: await mask(s, e),
        }),
      };
    }
    return {
      name,
      kind: "numeric",
      nullable: true,
      read: async (s, e) => ({ values: await values.read(s, e), nulls: await mask(s, e) }),
    };
  }
  throw new InputError(
    `${loc}: column ${path} has encoding ${JSON.stringify(enc ?? null)}, which is not supported.`,
    { tag: "Unsupported", object: objectIn(loc, path) },
  );
}

/** The column names of a data frame's `column-order` attribute (absent, one name, or a list). */
function columnOrder(order: unknown): string[] {
  if (order === undefined || order === null) return [];
  if (typeof order === "string") return [order];
  return Array.from(order as ArrayLike<unknown>, (x) => attrString(x) ?? String(x));
}
