/**
 * A one-row-group parquet file from flat columns, built from hyparquet-writer's page writers.
 *
 * hyparquet-writer's own `parquetWriteBuffer` builds a column's dictionary from the values in order
 * of first appearance, so a categorical's vocabulary order and its unused categories cannot reach
 * the file. pyarrow turns a parquet dictionary page into the Arrow dictionary as it stands (and
 * pandas into the categories), so a categorical column is written here with its own vocabulary as
 * the dictionary page and its codes as the data page.
 */
import { ByteWriter } from "hyparquet-writer";
import { writeColumn } from "hyparquet-writer/src/column.js";
import { writeDataPageV2 } from "hyparquet-writer/src/datapage.js";
import { writeDictionaryPage } from "hyparquet-writer/src/dictionary.js";
import { writeMetadata } from "hyparquet-writer/src/metadata.js";
import type { ColumnEncoder, Compressors, PageData } from "hyparquet-writer/src/types.js";

// hyparquet-writer depends on its own hyparquet: its types are taken through its functions.
type SchemaElement = ColumnEncoder["element"];
type CompressionCodec = ColumnEncoder["codec"];
type ColumnChunk = ReturnType<typeof writeColumn>["chunk"];
type FileMetaData = Parameters<typeof writeMetadata>[1];
type KeyValue = NonNullable<FileMetaData["key_value_metadata"]>[number];

/** One flat (non-nested) column; `element.repetition_type` OPTIONAL when it holds nulls. */
export type ParquetColumn =
  | { element: SchemaElement; data: ArrayLike<unknown> }
  /** A string column stored as `dictionary[codes[i]]`, code -1 = null; the dictionary written as given. */
  | { element: SchemaElement; codes: Int32Array; dictionary: readonly string[] };

export interface ParquetFileOptions {
  columns: ParquetColumn[];
  numRows: number;
  codec: CompressionCodec;
  compressors: Compressors;
  kvMetadata: KeyValue[];
  createdBy: string;
}

const PAR1 = 0x31524150;
const utf8 = new TextEncoder();

function pageData(values: ArrayLike<unknown>, optional: boolean): PageData {
  const definitionLevels = optional ? Array.from(values, (v) => (v === null || v === undefined ? 0 : 1)) : [];
  return {
    values: values as PageData["values"],
    definitionLevels,
    repetitionLevels: [],
    maxDefinitionLevel: optional ? 1 : 0,
  };
}

/** The dictionary page (the vocabulary, PLAIN) then one RLE_DICTIONARY data page of the codes. */
function writeDictionaryColumn(
  writer: ByteWriter,
  column: ColumnEncoder,
  codes: Int32Array,
  dictionary: readonly string[],
): ColumnChunk {
  const optional = column.element.repetition_type === "OPTIONAL";
  const start = writer.offset;
  let uncompressed = writeDictionaryPage(
    writer,
    column,
    dictionary.map((s) => utf8.encode(s)),
  );
  const dataPageOffset = writer.offset;
  const values = Array.from(codes, (c) => (c < 0 ? null : c));
  uncompressed += writeDataPageV2({
    writer,
    column,
    encoding: "RLE_DICTIONARY",
    pageData: pageData(values, optional),
  });
  return {
    file_offset: BigInt(start),
    meta_data: {
      type: "BYTE_ARRAY",
      encodings: ["PLAIN", "RLE", "RLE_DICTIONARY"],
      path_in_schema: [column.columnName],
      codec: column.codec,
      num_values: BigInt(codes.length),
      total_compressed_size: BigInt(writer.offset - start),
      total_uncompressed_size: BigInt(uncompressed),
      data_page_offset: BigInt(dataPageOffset),
      dictionary_page_offset: BigInt(start),
    },
  };
}

/** The whole file as bytes: `PAR1`, one row group (none when there are no rows), the footer. */
export function writeParquetFile(options: ParquetFileOptions): Uint8Array {
  const { columns, numRows, codec, compressors } = options;
  const root: SchemaElement = { name: "root", num_children: columns.length };
  const writer = new ByteWriter();
  writer.appendUint32(PAR1);
  const chunks: ColumnChunk[] = [];
  if (numRows > 0) {
    for (const col of columns) {
      const column: ColumnEncoder = {
        columnName: col.element.name,
        element: col.element,
        schemaPath: [root, col.element],
        codec,
        compressors,
        stats: false,
        pageSize: Number.POSITIVE_INFINITY,
        columnIndex: false,
        offsetIndex: false,
      };
      if ("codes" in col) {
        chunks.push(writeDictionaryColumn(writer, column, col.codes, col.dictionary));
      } else {
        const optional = col.element.repetition_type === "OPTIONAL";
        chunks.push(writeColumn({ writer, column, pageData: pageData(col.data, optional) }).chunk);
      }
    }
  }
  const rowGroups: FileMetaData["row_groups"] =
    numRows > 0
      ? [
          {
            columns: chunks,
            total_byte_size: chunks.reduce((s, c) => s + (c.meta_data?.total_uncompressed_size ?? 0n), 0n),
            num_rows: BigInt(numRows),
          },
        ]
      : [];
  const metadata = {
    version: 2,
    created_by: options.createdBy,
    schema: [root, ...columns.map((c) => c.element)],
    num_rows: BigInt(numRows),
    row_groups: rowGroups,
    key_value_metadata: options.kvMetadata,
  };
  // metadata_length is computed by the reader, never serialized (as hyparquet-writer does it)
  writeMetadata(writer, metadata as FileMetaData);
  writer.appendUint32(PAR1);
  return writer.getBytes();
}
