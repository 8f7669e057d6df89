#!/usr/bin/env node
// The README's main job. Grows with the toolkit: for now a storage round trip.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FolderStore } from "@deltacells/storage/node";

const store = new FolderStore(mkdtempSync(join(tmpdir(), "deltacells-demo-")));
await store.set("hello.txt", new TextEncoder().encode("hello, cells\n"));
console.log(`wrote and read back: ${new TextDecoder().decode(await store.get("hello.txt"))}`);
