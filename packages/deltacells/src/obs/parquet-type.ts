/**
 * Which Arrow type a parquet column of an obs shard holds, read off its schema element as any
 * parquet reader would: the physical type, then the annotation, legacy (`converted_type`) or
 * current (`logical_type`). The spec asks for "the Arrow types named in the schema" and nothing
 * about nullability, so a shard another writer made (pyarrow writes every field nullable, and
 * int32/int64 with the logical annotation only) is read when its types are the schema's.
 * Browser-safe.
 */
import type { SchemaElement } from "hyparquet";
import type { ObsArrowType, ObsColumnSchema } from "./schema.js";

const CONVERTED_INTEGERS: Record<string, ObsArrowType> = {
  INT_8: "int8",
  INT_16: "int16",
  INT_32: "int32",
  INT_64: "int64",
  UINT_8: "uint8",
  UINT_16: "uint16",
  UINT_32: "uint32",
  UINT_64: "uint64",
};

/** The integer type of an annotated INT32 or INT64 column, undefined for other annotations. */
function integerType(el: SchemaElement, bits: 32 | 64): ObsArrowType | undefined {
  const logical = el.logical_type;
  const fromLogical =
    logical === undefined
      ? undefined
      : logical.type === "INTEGER"
        ? (`${logical.isSigned ? "" : "u"}int${logical.bitWidth}` as ObsArrowType)
        : null; // DATE, TIME, TIMESTAMP, DECIMAL ...: not an integer column
  const fromConverted =
    el.converted_type === undefined ? undefined : (CONVERTED_INTEGERS[el.converted_type] ?? null);
  if (fromLogical === null || fromConverted === null) return undefined;
  if (fromLogical !== undefined && fromConverted !== undefined && fromLogical !== fromConverted)
    return undefined;
  const t = fromLogical ?? fromConverted ?? (bits === 32 ? "int32" : "int64");
  // the physical width must hold the type: 8- to 32-bit integers in INT32, 64-bit in INT64
  return (t === "int64" || t === "uint64") === (bits === 64) ? t : undefined;
}

/** The Arrow type of a parquet leaf column, or undefined when it is none an obs column has. */
export function parquetArrowType(el: SchemaElement): ObsArrowType | undefined {
  switch (el.type) {
    case "BOOLEAN":
      return el.converted_type === undefined && el.logical_type === undefined ? "bool" : undefined;
    case "FLOAT":
      return "float";
    case "DOUBLE":
      return "double";
    case "INT32":
      return integerType(el, 32);
    case "INT64":
      return integerType(el, 64);
    case "BYTE_ARRAY": {
      const utf8 = el.converted_type === "UTF8" || el.logical_type?.type === "STRING";
      const other =
        (el.converted_type !== undefined && el.converted_type !== "UTF8") ||
        (el.logical_type !== undefined && el.logical_type.type !== "STRING");
      return utf8 && !other ? "string" : undefined;
    }
    default:
      return undefined;
  }
}

/**
 * How a shard's parquet column disagrees with its schema entry (`type int32 REPEATED`, say), or
 * undefined when it holds the schema's Arrow type: REQUIRED or OPTIONAL (a category column whose
 * codes are nullable reads a null code as -1, missing).
 */
export function columnMismatch(el: SchemaElement | undefined, col: ObsColumnSchema): string | undefined {
  if (el === undefined) return "missing";
  const t = parquetArrowType(el);
  const repeated = el.repetition_type === "REPEATED" || el.num_children !== undefined;
  if (t === col.arrow_type && !repeated) return undefined;
  const logical = el.logical_type;
  const parts = [
    el.type ?? "a group",
    el.converted_type,
    logical?.type === "INTEGER"
      ? `INTEGER(${logical.bitWidth}, ${logical.isSigned ? "signed" : "unsigned"})`
      : logical?.type,
    el.repetition_type,
  ];
  return `${parts.filter((p) => p !== undefined).join(" ")}${repeated ? "" : `, Arrow type ${t ?? "none of an obs column"}`}`;
}
