/**
 * The parquet libraries, loaded on first use. Only obs, `var.parquet` and validation read or write
 * parquet: a program that streams tiles (the training loader, `deltacells stream`) never does, and
 * should not load hyparquet, its decompressors and its writer (about 90 modules, a quarter of a
 * command's start-up). Dynamic imports of literal specifiers, which bundlers split into chunks.
 */
let reader: Promise<typeof import("hyparquet")> | undefined;
let decompressors: Promise<typeof import("hyparquet-compressors")["compressors"]> | undefined;
let writer: Promise<typeof import("hyparquet-writer")> | undefined;

/** hyparquet (reading). */
export function loadParquet(): Promise<typeof import("hyparquet")> {
  reader ??= import("hyparquet");
  return reader;
}

/** hyparquet-compressors' decompressors, for `parquetRead`. */
export function loadDecompressors(): Promise<typeof import("hyparquet-compressors")["compressors"]> {
  decompressors ??= import("hyparquet-compressors").then((m) => m.compressors);
  return decompressors;
}

/** hyparquet-writer. */
export function loadParquetWriter(): Promise<typeof import("hyparquet-writer")> {
  writer ??= import("hyparquet-writer");
  return writer;
}
