/**
 * numpy bool datasets in an HDF5 file written with h5wasm, which cannot create HDF5 enum types.
 * h5py stores numpy bool as the enum int8 {FALSE: 0, TRUE: 1}, and anndata needs exactly that for
 * bool columns and for the masks of its nullable encodings (pandas refuses an integer mask). So a
 * bool dataset is first written as a compound of one int8 member with a name unique in the file
 * (the same one byte per element), and after the file is closed its datatype message is rewritten
 * in place into h5py's enum, the object header's checksum recomputed. Every step checks the bytes
 * it expects and throws otherwise: a file is never left with a column that is silently wrong.
 */
import { randomBytes } from "node:crypto";
import { open } from "node:fs/promises";
import type { Dataset, Group } from "h5wasm/node";

/** The datatype message of h5py's bool: enum (version 1, class 8) of 2 members, 1 byte, base int8. */
const BOOL_ENUM = Uint8Array.from([
  0x18,
  2,
  0,
  0,
  1,
  0,
  0,
  0,
  // base type: integer (version 1, class 0), little-endian, signed, 1 byte, offset 0, precision 8
  0x10,
  0x08,
  0,
  0,
  1,
  0,
  0,
  0,
  0,
  0,
  8,
  0,
  // names, NUL-padded to a multiple of 8 bytes (datatype version 1)
  ...new TextEncoder().encode("FALSE\0\0\0TRUE\0\0\0\0"),
  // values, one base-type element each
  0,
  1,
]);

/** Datatype message type in an object header. */
const DATATYPE = 3;

/** The bool datasets of one file: create them while it is open, then {@link patch} after close. */
export class BoolDatasets {
  /** Random per file: the placeholder names cannot match bytes of the user's data. */
  private readonly nonce = randomBytes(12).toString("hex");
  private readonly names: string[] = [];

  /** Creates `name` in `g` holding `values` (0 = false, anything else = true). */
  create(g: Group, name: string, values: Uint8Array): Dataset {
    // long enough that the placeholder's message outgrows the enum's by a NULL message's header
    const member = `deltacells-bool-${this.nonce}-${this.names.length}`;
    this.names.push(member);
    const bytes = Int8Array.from(values, (v) => (v ? 1 : 0));
    return g.create_dataset({
      name,
      data: new Map([[member, bytes]]) as never,
      shape: [values.length],
      dtype: [[member, "<b"]],
    });
  }

  /** Rewrites every placeholder of the closed file at `path` into the bool enum. */
  async patch(path: string): Promise<void> {
    if (this.names.length === 0) return;
    const f = await open(path, "r+");
    try {
      const size = (await f.stat()).size;
      const todo = new Map(this.names.map((n) => [n, Buffer.from(n, "latin1")]));
      const prefix = Buffer.from(`deltacells-bool-${this.nonce}-`, "latin1");
      // Windows overlap by a whole object header, so a header cut by one is whole in the next.
      const WINDOW = 1 << 22;
      const OVERLAP = 1 << 16;
      const buf = Buffer.alloc(WINDOW);
      for (let at = 0; at < size && todo.size > 0; at += WINDOW - OVERLAP) {
        const { bytesRead } = await f.read(buf, 0, WINDOW, at);
        const view = buf.subarray(0, bytesRead);
        for (let p = view.indexOf(prefix); p >= 0; p = view.indexOf(prefix, p + 1)) {
          const end = view.indexOf(0, p);
          if (end < 0) continue;
          const name = view.toString("latin1", p, end);
          if (!todo.has(name)) continue;
          const header = await rewriteHeader(f, at + p, name);
          if (header) todo.delete(name);
        }
      }
      if (todo.size > 0) {
        throw new Error(
          `${path}: ${todo.size} bool dataset(s) written as placeholders were not found in the closed file to be made HDF5 booleans; the file is not a valid export`,
        );
      }
    } finally {
      await f.close();
    }
  }
}

type FileHandle = Awaited<ReturnType<typeof open>>;

/**
 * The object header (version 2, "OHDR") holding the placeholder whose member name starts at
 * `namePos`, rewritten: the datatype message becomes the enum, the rest of its space a NULL
 * message, and the chunk's checksum recomputed. False when the bytes there are not such a header.
 */
async function rewriteHeader(f: FileHandle, namePos: number, name: string): Promise<boolean> {
  const from = Math.max(0, namePos - (1 << 16));
  const buf = Buffer.alloc(namePos - from + name.length + 64);
  const { bytesRead } = await f.read(buf, 0, buf.length, from);
  const b = buf.subarray(0, bytesRead);
  const rel = namePos - from;
  for (let h = b.lastIndexOf("OHDR", rel); h >= 0; h = h > 0 ? b.lastIndexOf("OHDR", h - 1) : -1) {
    const chunk = await readChunk(f, from + h);
    if (!chunk) continue;
    const { bytes, messagesAt, checksumAt, creationOrder } = chunk;
    if (lookup3(bytes.subarray(0, checksumAt)) !== bytes.readUInt32LE(checksumAt)) continue;
    const headerLen = creationOrder ? 6 : 4;
    for (let m = messagesAt; m + headerLen <= checksumAt; ) {
      const type = bytes[m]!;
      const len = bytes.readUInt16LE(m + 1);
      const body = m + headerLen;
      if (body + len > checksumAt) break;
      if (type === DATATYPE && from + h + body + 8 === namePos && isPlaceholder(bytes, body, len, name)) {
        const rest = len - BOOL_ENUM.length - headerLen;
        if (rest < 0) return false;
        bytes.writeUInt16LE(BOOL_ENUM.length, m + 1);
        bytes.set(BOOL_ENUM, body);
        // the freed space: a NULL message (type 0) of zeros, which readers skip
        const nul = body + BOOL_ENUM.length;
        bytes.fill(0, nul, body + len);
        bytes.writeUInt16LE(rest, nul + 1);
        bytes.writeUInt32LE(lookup3(bytes.subarray(0, checksumAt)), checksumAt);
        await f.write(bytes, 0, bytes.length, from + h);
        return true;
      }
      m = body + len;
    }
  }
  return false;
}

/** A compound datatype of one 1-byte member named `name` (the placeholder). */
function isPlaceholder(b: Buffer, body: number, len: number, name: string): boolean {
  const cls = b[body]! & 0x0f;
  return (
    cls === 6 &&
    b.readUInt16LE(body + 1) === 1 &&
    b.readUInt32LE(body + 4) === 1 &&
    len >= 8 + name.length + 1 &&
    b.toString("latin1", body + 8, body + 8 + name.length) === name &&
    b[body + 8 + name.length] === 0
  );
}

/** Chunk 0 of the version 2 object header at `at`: its bytes up to and with the checksum. */
async function readChunk(
  f: FileHandle,
  at: number,
): Promise<{ bytes: Buffer; messagesAt: number; checksumAt: number; creationOrder: boolean } | undefined> {
  const head = Buffer.alloc(32);
  await f.read(head, 0, 32, at);
  if (head.toString("latin1", 0, 4) !== "OHDR" || head[4] !== 2) return undefined;
  const flags = head[5]!;
  let p = 6 + (flags & 0x20 ? 16 : 0) + (flags & 0x10 ? 4 : 0);
  const width = 1 << (flags & 3);
  let size = 0;
  for (let i = width - 1; i >= 0; i--) size = size * 256 + head[p + i]!;
  p += width;
  if (size > 1 << 24) return undefined;
  const bytes = Buffer.alloc(p + size + 4);
  const { bytesRead } = await f.read(bytes, 0, bytes.length, at);
  if (bytesRead !== bytes.length) return undefined;
  return { bytes, messagesAt: p, checksumAt: p + size, creationOrder: (flags & 0x04) !== 0 };
}

const rot = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;

/** Bob Jenkins' lookup3 `hashlittle` with seed 0: the checksum of HDF5's version 2 metadata. */
export function lookup3(k: Uint8Array): number {
  let length = k.length;
  let a = (0xdeadbeef + length) >>> 0;
  let b = a;
  let c = a;
  let o = 0;
  const word = (i: number) => (k[i]! | (k[i + 1]! << 8) | (k[i + 2]! << 16) | (k[i + 3]! << 24)) >>> 0;
  while (length > 12) {
    a = (a + word(o)) >>> 0;
    b = (b + word(o + 4)) >>> 0;
    c = (c + word(o + 8)) >>> 0;
    a = (a - c) >>> 0;
    a = (a ^ rot(c, 4)) >>> 0;
    c = (c + b) >>> 0;
    b = (b - a) >>> 0;
    b = (b ^ rot(a, 6)) >>> 0;
    a = (a + c) >>> 0;
    c = (c - b) >>> 0;
    c = (c ^ rot(b, 8)) >>> 0;
    b = (b + a) >>> 0;
    a = (a - c) >>> 0;
    a = (a ^ rot(c, 16)) >>> 0;
    c = (c + b) >>> 0;
    b = (b - a) >>> 0;
    b = (b ^ rot(a, 19)) >>> 0;
    a = (a + c) >>> 0;
    c = (c - b) >>> 0;
    c = (c ^ rot(b, 4)) >>> 0;
    b = (b + a) >>> 0;
    length -= 12;
    o += 12;
  }
  if (length === 0) return c;
  // the tail, zero-padded to 12 bytes (the switch's fall-through in the C original)
  const tail = new Uint8Array(12);
  tail.set(k.subarray(o, o + length));
  const t = (i: number) =>
    (tail[i]! | (tail[i + 1]! << 8) | (tail[i + 2]! << 16) | (tail[i + 3]! << 24)) >>> 0;
  a = (a + t(0)) >>> 0;
  b = (b + t(4)) >>> 0;
  c = (c + t(8)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rot(b, 14)) >>> 0;
  a = (a ^ c) >>> 0;
  a = (a - rot(c, 11)) >>> 0;
  b = (b ^ a) >>> 0;
  b = (b - rot(a, 25)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rot(b, 16)) >>> 0;
  a = (a ^ c) >>> 0;
  a = (a - rot(c, 4)) >>> 0;
  b = (b ^ a) >>> 0;
  b = (b - rot(a, 14)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rot(b, 24)) >>> 0;
  return c;
}
