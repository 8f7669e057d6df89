/**
 * AnnData data frames (obs, var, dataframe obsm entries) as {@link ColumnTable}s: the current
 * group encoding (column-order, categorical, nullable-*) and the pre-0.7 compound dataset.
 * Browser-safe.
 */

import { datetimeTexts, unitText } from "./datetime-text.js";
import { AnndataError, objectIn, UnsupportedColumnsError } from "./errors.js";
import { chunkWindowed } from "./row-window.js";
import {
  attrString,
  joinPath,
  type Tree,
  type TreeArray,
  type TreeGroup,
  type TreeNode,
  toNumbers,
} from "./tree.js";
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
  if (node.kind === "group") return groupFrame(tree, node, nRows, exclude);
  const table = await legacyFrame(tree, node, exclude);
  if (table.index.length !== nRows) throw wrongRows(loc, path, table.index.length, nRows);
  return table;
}

async function groupFrame(
  tree: Tree,
  group: TreeGroup,
  nRows: number,
  exclude: ReadonlySet<string>,
): Promise<ColumnTable> {
  const loc = tree.location;
  const attrs = await group.attrs();
  const { indexKey, indexNode } = await indexOf(tree, group, attrs);
  if (indexNode?.kind !== "array") {
    throw new AnndataError(`${loc}: data frame ${group.path} has no index array ${indexKey}.`, {
      tag: "MalformedInput",
      object: objectIn(loc, group.path),
    });
  }
  const index = await indexNode.readStrings();
  if (index.length !== nRows) throw wrongRows(loc, group.path, index.length, nRows);
  const names = columnOrder(attrs["column-order"]);
  const { columns: readers, excluded } = await columnReaders(tree, group.path, names, exclude, nRows);
  const columns: TableColumn[] = [];
  for (const r of readers) columns.push(await wholeColumn(r, nRows));
  return { indexName: indexKey === "_index" ? null : indexKey, index, columns, excluded };
}

/** A group frame's index: its name (the `_index` attribute, `_index` by default) and node. */
async function indexOf(
  tree: Tree,
  group: TreeGroup,
  attrs: Record<string, unknown>,
): Promise<{ indexKey: string; indexNode: TreeNode | undefined }> {
  const indexKey = attrString(attrs._index) ?? "_index";
  return { indexKey, indexNode: await tree.get(joinPath(group.path, indexKey)) };
}

/**
 * The name of row `i` of the frame at `path` (for an error message), reading only that index
 * entry where the frame is a group; undefined when the frame has no such row or no index.
 */
export async function rowName(tree: Tree, path: string, i: number): Promise<string | undefined> {
  const node = await tree.get(path);
  if (node === undefined) return String(i); // as readDataFrame names the rows of an absent frame
  if (node.kind === "array") {
    // Pre-0.7 record array: its fields cannot be read one by one.
    const index = node.fields ? (await node.readCompound()).get("index") : undefined;
    return Array.isArray(index) ? index[i] : undefined;
  }
  const { indexNode } = await indexOf(tree, node, await node.attrs());
  if (indexNode?.kind !== "array" || !(i >= 0 && i < (indexNode.shape[0] ?? 0))) return undefined;
  return (await indexNode.readStrings(i, i + 1))[0];
}

function wrongRows(loc: string, path: string, found: number, nRows: number): AnndataError {
  return new AnndataError(`${loc}: ${path} has ${found} rows, but the matrix has ${nRows} along that axis.`, {
    tag: "MalformedInput",
    object: objectIn(loc, path),
  });
}

/** All `nRows` rows of a column read by range. */
async function wholeColumn(r: TableColumnReader, nRows: number): Promise<TableColumn> {
  const { name } = r;
  const nullable = r.kind !== "category" && r.nullable ? { nullable: true } : {};
  switch (r.kind) {
    case "category":
      return {
        name,
        kind: "category",
        codes: await r.read(0, nRows),
        categories: r.categories,
        ordered: r.ordered,
      };
    case "string":
      return {
        name,
        kind: "string",
        values: await r.read(0, nRows),
        ...nullable,
        ...(r.textFrom ? { textFrom: r.textFrom } : {}),
      };
    case "bool":
      return { name, kind: "bool", ...(await r.read(0, nRows)), ...nullable };
    case "numeric":
      return { name, kind: "numeric", ...(await r.read(0, nRows)), ...nullable };
  }
}

/** Pre-0.7 anndata: a compound dataset; categorical columns keep codes, categories in uns. */
async function legacyFrame(tree: Tree, a: TreeArray, exclude: ReadonlySet<string>): Promise<ColumnTable> {
  const loc = tree.location;
  if (!a.fields) {
    throw new AnndataError(`${loc}: ${a.path} is neither a data frame group nor a record array.`, {
      tag: "MalformedInput",
      object: objectIn(loc, a.path),
    });
  }
  const cols = await a.readCompound();
  const index = cols.get("index");
  if (!Array.isArray(index)) {
    throw new AnndataError(`${loc}: legacy data frame ${a.path} has no string field "index".`, {
      tag: "MalformedInput",
      object: objectIn(loc, a.path),
    });
  }
  const columns: TableColumn[] = [];
  const excluded: string[] = [];
  const unsupported: [string, string][] = [];
  for (const f of a.fields) {
    if (f.name === "index" || f.shape) continue;
    if (exclude.has(f.name)) {
      excluded.push(f.name);
      continue;
    }
    const v = cols.get(f.name);
    if (v === undefined) {
      // a field no reader decodes: refused by name with the others, never dropped unseen
      unsupported.push([f.name, f.dtype ?? `a ${f.kind} field of ${f.itemSize} bytes`]);
      continue;
    }
    if (Array.isArray(v)) {
      columns.push({ name: f.name, kind: "string", values: v });
      continue;
    }
    if (f.datetime) {
      const textFrom = `datetime64[${unitText(f.datetime)}]`;
      columns.push({
        name: f.name,
        kind: "string",
        values: datetimeTexts(v as BigInt64Array, f.datetime),
        textFrom,
      });
      continue;
    }
    const cats = await tree.get(`uns/${f.name}_categories`);
    if (cats?.kind === "array" && (f.kind === "int" || f.kind === "uint")) {
      const categories = await categoriesOf(cats);
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
  if (unsupported.length > 0) {
    throw UnsupportedColumnsError.of(
      loc,
      a.path,
      unsupported.map(([n]) => n),
      unsupported.map(([, t]) => t),
    );
  }
  return { indexName: "index", index, columns, excluded };
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
  const attrs = await group.attrs();
  const { indexKey, indexNode } = await indexOf(tree, group, attrs);
  if (indexNode?.kind !== "array" || indexNode.element !== "string") return undefined;
  const index = rowsOf(loc, indexNode, nRows);
  const names = columnOrder(attrs["column-order"]);
  return {
    indexName: indexKey === "_index" ? null : indexKey,
    index: (a, b) => index.readStrings(a, b),
    ...(await columnReaders(tree, group.path, names, exclude, nRows)),
  };
}

/** `a`, refused unless it is 1-d with `nRows` rows. */
function rowsOf(loc: string, a: TreeArray, nRows: number): TreeArray {
  if (a.shape.length !== 1 || a.shape[0] !== nRows) {
    throw new AnndataError(
      `${loc}: ${a.path} has shape ${JSON.stringify(a.shape)}, but the matrix has ${nRows} rows along that axis.`,
      { tag: "MalformedInput", object: objectIn(loc, a.path) },
    );
  }
  return chunkWindowed(a);
}

/**
 * The readers of the columns `names` of the frame at `frame`, and the names in `exclude` left out;
 * columns of an encoding or element type that has no {@link TableColumn} (datetimes, nested
 * frames, complex numbers ...) are refused together, by name, in one {@link UnsupportedColumnsError}.
 */
async function columnReaders(
  tree: Tree,
  frame: string,
  names: string[],
  exclude: ReadonlySet<string>,
  nRows: number,
): Promise<{ columns: TableColumnReader[]; excluded: string[] }> {
  // anndata 0.7's categories folder, looked up once: most files have none, and then no column
  // costs a lookup there (each is a round trip to the HDF5 thread). Not listed: a zarr store read
  // over HTTP cannot list.
  const legacy = (await tree.get(joinPath(frame, "__categories")))?.kind === "group";
  const columns: TableColumnReader[] = [];
  const excluded: string[] = [];
  const unsupported: string[] = [];
  const types: string[] = [];
  for (const name of names) {
    if (exclude.has(name)) {
      excluded.push(name);
      continue;
    }
    try {
      columns.push(await columnReader(tree, frame, name, nRows, legacy));
    } catch (err) {
      if (!(err instanceof AnndataError) || err._tag !== "Unsupported") throw err;
      unsupported.push(name);
      types.push(typeof err.found === "string" ? err.found : "");
    }
  }
  if (unsupported.length > 0) throw UnsupportedColumnsError.of(tree.location, frame, unsupported, types);
  return { columns, excluded };
}

/** A categorical column's categories, as strings (numbers formatted as pandas prints them). */
async function categoriesOf(a: TreeArray): Promise<string[]> {
  return a.element === "string" ? a.readStrings() : Array.from(toNumbers(await a.read()), String);
}

const codesOf = (a: TreeArray) => async (s: number, e: number) =>
  Int32Array.from(toNumbers(await a.read(s, e)));

/**
 * One column's reader: its layout and categories read here, its rows when asked for. `legacy`:
 * the frame has a `__categories` folder (anndata 0.7, data frame encoding 0.1.0: a categorical
 * column stored as its codes, the categories there under its name, `ordered` as their attribute).
 */
async function columnReader(
  tree: Tree,
  frame: string,
  name: string,
  nRows: number,
  legacy: boolean,
): Promise<TableColumnReader> {
  const loc = tree.location;
  const rows = (a: TreeArray) => rowsOf(loc, a, nRows);
  const path = joinPath(frame, name);
  const node = await tree.get(path);
  if (node === undefined) {
    throw new AnndataError(`${loc}: column ${path} is listed in column-order but missing.`, {
      tag: "MalformedInput",
      object: objectIn(loc, path),
    });
  }
  if (node.kind === "array") {
    const cats =
      legacy && node.element !== "string"
        ? await tree.get(joinPath(frame, `__categories/${name}`))
        : undefined;
    if (cats?.kind === "array") {
      const ordered = Boolean((await cats.attrs()).ordered);
      return {
        name,
        kind: "category",
        categories: await categoriesOf(cats),
        ordered,
        read: codesOf(rows(node)),
      };
    }
    if (node.element === "other" || node.element === "compound" || node.shape.length !== 1) {
      const type =
        node.shape.length !== 1
          ? `a ${node.shape.length}-d array of shape ${JSON.stringify(node.shape)}`
          : (node.dtype ?? (node.element === "compound" ? "a record array" : "an unknown element type"));
      throw new AnndataError(`${node.path} is ${type}, which no table column holds.`, {
        tag: "Unsupported",
        found: type,
      });
    }
    const a = rows(node);
    if (a.element === "datetime" && node.datetime) {
      // obs has no date type: ISO-8601 text keeps every value (pandas.to_datetime reads it back)
      const unit = node.datetime;
      return {
        name,
        kind: "string",
        textFrom: `datetime64[${unitText(unit)}]`,
        read: async (s, e) => datetimeTexts((await a.read(s, e)) as BigInt64Array, unit),
      };
    }
    if (a.element === "string") return { name, kind: "string", read: (s, e) => a.readStrings(s, e) };
    if (a.element === "bool")
      return {
        name,
        kind: "bool",
        read: async (s, e) => ({ values: Uint8Array.from(toNumbers(await a.read(s, e))) }),
      };
    return { name, kind: "numeric", read: async (s, e) => ({ values: await a.read(s, e) }) };
  }
  const attrs = await node.attrs();
  const enc = attrString(attrs["encoding-type"]);
  const child = async (n: string): Promise<TreeArray> => {
    const a = await tree.get(joinPath(path, n));
    if (a?.kind !== "array") {
      throw new AnndataError(`${loc}: ${enc} column ${path} has no ${n} array.`, {
        tag: "MalformedInput",
        object: objectIn(loc, path),
      });
    }
    return a;
  };
  if (enc === "categorical") {
    const categories = await categoriesOf(await child("categories"));
    const ordered = Boolean(attrs.ordered);
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
  throw new AnndataError(
    `${loc}: column ${path} has encoding ${JSON.stringify(enc ?? null)}, which is not supported.`,
    { tag: "Unsupported", object: objectIn(loc, path), found: `encoding ${JSON.stringify(enc ?? null)}` },
  );
}

/** The column names of a data frame's `column-order` attribute (absent, one name, or a list). */
/** The names of a dataframe group's `column-order` attribute. */
export function columnOrder(order: unknown): string[] {
  if (order === undefined || order === null) return [];
  if (typeof order === "string") return [order];
  return Array.from(order as ArrayLike<unknown>, (x) => attrString(x) ?? String(x));
}
