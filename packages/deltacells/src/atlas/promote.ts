/**
 * The numeric type that holds the values of two inputs' columns, as numpy promotes them (what
 * `pandas.concat`, hence `anndata.concat`, gives): integers widen to the narrowest integer that
 * holds both, an integer with a float becomes the float that holds it (float32 up to 16-bit
 * integers, float64 beyond). One pair has no exact answer: uint64 with a signed integer, which
 * numpy turns into float64, losing integers above 2^53; it is refused instead.
 */
import type { ObsNumericType } from "../obs/schema.js";

interface IntType {
  signed: boolean;
  bits: 8 | 16 | 32 | 64;
}

function intType(t: ObsNumericType): IntType | undefined {
  const m = /^(u?)int(8|16|32|64)$/.exec(t);
  return m ? { signed: m[1] === "", bits: Number(m[2]) as IntType["bits"] } : undefined;
}

function intName(t: IntType): ObsNumericType {
  return `${t.signed ? "" : "u"}int${t.bits}` as ObsNumericType;
}

/** The type holding both `a` and `b`, or undefined when no type holds both exactly. */
export function promoteNumeric(a: ObsNumericType, b: ObsNumericType): ObsNumericType | undefined {
  if (a === b) return a;
  const ia = intType(a);
  const ib = intType(b);
  if (ia && ib) {
    if (ia.signed === ib.signed)
      return intName({ signed: ia.signed, bits: Math.max(ia.bits, ib.bits) as IntType["bits"] });
    const signed = ia.signed ? ia : ib;
    const unsigned = ia.signed ? ib : ia;
    if (signed.bits > unsigned.bits) return intName(signed);
    if (unsigned.bits === 64) return undefined;
    return intName({ signed: true, bits: (unsigned.bits * 2) as IntType["bits"] });
  }
  if (!ia && !ib) return "double"; // float and double
  const int = (ia ?? ib)!;
  const float = ia ? b : a;
  return float === "float" && int.bits <= 16 ? "float" : "double";
}
