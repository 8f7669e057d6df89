/**
 * Writes a synthetic count matrix (bench/synthetic-source.ts: heavy-tailed genes, log-normal cell
 * sizes, negative-binomial counts) as three raw little-endian files both writers read: `indptr`
 * (int64, cells + 1), `indices` (int32), `data` (int32), and, last, `meta.json` (a folder without it
 * is regenerated).
 *
 *   node --import tsx --conditions=source bench/sporadik-write/generate.ts DIR --cells N --genes-per-cell K
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { syntheticSource } from "../synthetic-source.js";

/** What `meta.json` holds. */
export interface MatrixMeta {
  nRows: number;
  nCols: number;
  nnz: number;
  seconds: number;
}

/** Generate into `dir` unless a complete matrix of these parameters is there. */
export async function generate(
  dir: string,
  nCells: number,
  nGenes: number,
  perCell: number,
): Promise<MatrixMeta> {
  const metaPath = join(dir, "meta.json");
  if (existsSync(metaPath)) {
    const meta = JSON.parse(readFileSync(metaPath, "utf8")) as MatrixMeta;
    if (meta.nRows === nCells && meta.nCols === nGenes) return meta;
  }
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const source = syntheticSource({ nCells, nGenes, genesPerCell: perCell });
  const files = await Promise.all(["indptr", "indices", "data"].map((name) => open(join(dir, name), "w")));
  const [indptrFile, indicesFile, dataFile] = files as [
    import("node:fs/promises").FileHandle,
    import("node:fs/promises").FileHandle,
    import("node:fs/promises").FileHandle,
  ];
  let nnz = 0;
  await indptrFile.write(new Uint8Array(new BigInt64Array(1).buffer));
  for await (const block of source.rowBlocks({ blockCells: 4096 })) {
    const offsets = new BigInt64Array(block.nRows);
    for (let r = 0; r < block.nRows; r++) offsets[r] = BigInt(nnz + (block.indptr[r + 1] as number));
    await indptrFile.write(new Uint8Array(offsets.buffer));
    await indicesFile.write(
      new Uint8Array(block.indices.buffer, block.indices.byteOffset, block.indices.byteLength),
    );
    const data = block.data as Int32Array;
    await dataFile.write(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    nnz += block.indices.length;
  }
  await Promise.all(files.map((file) => file.close()));
  const meta: MatrixMeta = { nRows: nCells, nCols: nGenes, nnz, seconds: (performance.now() - t0) / 1000 };
  writeFileSync(metaPath, JSON.stringify(meta));
  return meta;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      cells: { type: "string", default: "10000" },
      genes: { type: "string", default: "20000" },
      "genes-per-cell": { type: "string", default: "2000" },
    },
  });
  const meta = await generate(
    positionals[0] as string,
    Number(values.cells),
    Number(values.genes),
    Number(values["genes-per-cell"]),
  );
  console.log(JSON.stringify(meta));
}
