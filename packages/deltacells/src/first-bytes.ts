/**
 * The start of an object for an error message: at most 8 bytes, escaped, so that a binary file
 * given where JSON was expected (an .h5ad as manifest.json) shows as `"\x89HDF\r\n\x1a\n"...` and
 * not as raw bytes that garble the terminal or break the message across lines. Browser-safe.
 */

const SHOWN = 8;

/** The first (at most 8) bytes of `bytes` as a quoted, escaped string, `...` when there are more. */
export function firstBytes(bytes: Uint8Array): string {
  let out = '"';
  for (const b of bytes.subarray(0, SHOWN)) {
    if (b === 0x22) out += '\\"';
    else if (b === 0x5c) out += "\\\\";
    else if (b === 0x0a) out += "\\n";
    else if (b === 0x0d) out += "\\r";
    else if (b === 0x09) out += "\\t";
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, "0")}`;
  }
  return `${out}"${bytes.length > SHOWN ? "..." : ""}`;
}

/** {@link firstBytes} of a text's UTF-8 encoding. */
export function firstBytesOfText(text: string): string {
  return firstBytes(new TextEncoder().encode(text.slice(0, SHOWN + 1)));
}
