/**
 * A set of cells as a short text for the page's URL: the sorted cells as runs (the gap since the
 * last run's end, then the run's length), each number a LEB128 varint, the bytes in base64url. A
 * lasso of 10,000 scattered cells among a million takes ~27,000 characters; a contiguous block,
 * a few.
 */

export function encodeCells(cells: readonly number[]): string {
  const sorted = Int32Array.from(new Set(cells)).sort();
  const bytes: number[] = [];
  const put = (v: number) => {
    while (v >= 0x80) {
      bytes.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 0x80);
    }
    bytes.push(v);
  };
  let next = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i + 1;
    while (j < sorted.length && sorted[j] === sorted[j - 1]! + 1) j++;
    put(sorted[i]! - next);
    put(j - i);
    next = sorted[j - 1]! + 1;
    i = j;
  }
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The cells of {@link encodeCells}'s text, ascending; refuses a malformed code or cells past `nCells`. */
export function decodeCells(code: string, nCells: number): number[] {
  let text: string;
  try {
    text = atob(code.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw new Error(`the selection in the URL is not a selection code (${code.slice(0, 20)}…)`);
  }
  const out: number[] = [];
  let at = 0;
  const get = () => {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (at >= text.length) throw new Error("the selection in the URL is cut short");
      const b = text.charCodeAt(at++);
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 0x80;
    }
  };
  let next = 0;
  while (at < text.length) {
    const start = next + get();
    const length = get();
    if (length < 1 || start + length > nCells)
      throw new Error(`the selection in the URL names cells past the dataset's ${nCells}`);
    for (let c = start; c < start + length; c++) out.push(c);
    next = start + length;
  }
  return out;
}
