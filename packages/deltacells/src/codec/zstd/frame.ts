/**
 * Reads the content size from a zstd frame header (RFC 8878 section 3.1.1.1) without
 * decompressing, so a decoder can check a frame's declared size before it allocates or writes.
 */

const ZSTD_MAGIC = 0xfd2fb528;
const DICT_ID_SIZE = [0, 1, 2, 4] as const;
const FCS_SIZE = [0, 2, 4, 8] as const;

/**
 * The frame's declared content size, or a string saying why there is none (not a zstd frame,
 * truncated header, reserved bit set, no content size field).
 */
export function zstdFrameContentSize(frame: Uint8Array): number | string {
  if (frame.length < 6) return `${frame.length} bytes, too short for a zstd frame`;
  const magic = (frame[0]! | (frame[1]! << 8) | (frame[2]! << 16) | (frame[3]! << 24)) >>> 0;
  if (magic !== ZSTD_MAGIC) return `magic 0x${magic.toString(16)} is not a zstd frame`;
  const fhd = frame[4]!;
  if (fhd & 0x08) return "reserved bit set in the zstd frame header";
  const fcsFlag = fhd >> 6;
  const singleSegment = (fhd >> 5) & 1;
  const dictIdSize = DICT_ID_SIZE[fhd & 3]!;
  const fcsSize = fcsFlag === 0 ? singleSegment : FCS_SIZE[fcsFlag]!;
  if (fcsSize === 0) return "a zstd frame without content size";
  const at = 5 + (singleSegment ? 0 : 1) + dictIdSize;
  if (frame.length < at + fcsSize) return "truncated zstd frame header";
  // (No closure over `frame`: this runs for every frame of every tile.)
  switch (fcsSize) {
    case 1:
      return frame[at]!;
    case 2:
      return (frame[at]! | (frame[at + 1]! << 8)) + 256;
    case 4:
      return u32le(frame, at);
    default:
      return u32le(frame, at + 4) * 0x1_0000_0000 + u32le(frame, at);
  }
}

function u32le(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}
