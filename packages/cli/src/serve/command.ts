/**
 * `deltacells serve DIR`: every dataset and store under DIR over HTTP (ranges, validators, CORS),
 * and the viewer at `/`. Runs until interrupted.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Common, commonHelp, intOption, parse, UsageError } from "../args.js";
import type { CommandResult } from "../command.js";
import { startServer } from "./http.js";

/** A local folder only, and no storage requests to count: no remote-read options, no --stats. */
export const SERVE_COMMON: Common = { stats: false, remote: false };

export const SERVE_HELP = `usage: deltacells serve DIR [--port N] [--host ADDRESS] [--open]

Serve every deltacells dataset and sporadik store under DIR over HTTP, read-only, with byte ranges
(206, 416), ETag/Last-Modified and CORS for reads, and the viewer at /. Open a dataset with
/?data=/NAME/. Only files inside a dataset or store (a folder holding manifest.json or zarr.json)
are served; nothing is listed; paths reaching outside DIR (.., symlinks out, hidden files) are 404.

options:
  --port N       the port (default 8000; 0 picks a free one)
  --host ADDR    the address to bind (default 127.0.0.1, this machine only; 0.0.0.0 exposes the data
                 to the network)
  --open         open the viewer in the default browser
${commonHelp(SERVE_COMMON)}`;

/** The built viewer beside this package in the checkout (apps/viewer/dist), from src/ or dist/. */
function viewerDir(): string {
  return fileURLToPath(new URL("../../../../apps/viewer/dist/", import.meta.url));
}

/** The datasets and stores directly under `root` (or `root` itself), for the printed links. */
function datasetsUnder(root: string): string[] {
  const isRoot = (dir: string) =>
    existsSync(join(dir, "manifest.json")) || existsSync(join(dir, "zarr.json"));
  if (isRoot(root)) return [""];
  return readdirSync(root)
    .filter(
      (name) => !name.startsWith(".") && statSync(join(root, name)).isDirectory() && isRoot(join(root, name)),
    )
    .sort();
}

function openBrowser(url: string): void {
  const cmd = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  const child = spawn(cmd, [url], { stdio: "ignore", detached: true });
  child.on("error", () => process.stderr.write(`deltacells serve: could not start ${cmd}; open ${url}\n`));
  child.unref();
}

/** The options of `deltacells serve` besides the shared ones (args.ts). */
export const SERVE_OPTIONS = {
  port: { type: "string" },
  host: { type: "string" },
  open: { type: "boolean" },
} as const;

export async function serve(argv: string[]): Promise<CommandResult> {
  const { values, positionals } = parse(argv, SERVE_OPTIONS, ["DIR"], SERVE_COMMON);
  if (values.help) return { text: SERVE_HELP };
  const root = positionals[0]!;
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new UsageError(`DIR must be a folder holding datasets or stores, got ${JSON.stringify(root)}`);
  }
  const port = intOption(values, "port", 8000, 0, 65535)!;
  const host = (values.host as string | undefined) ?? "127.0.0.1";
  const running = await startServer({ root, viewerDir: viewerDir(), host, port });
  const names = datasetsUnder(root);
  const links = names.map((n) => `${running.url}?data=/${n ? `${encodeURIComponent(n)}/` : ""}`);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ url: running.url, root, datasets: names, links })}\n`);
  } else {
    process.stdout.write(`deltacells serve: ${root} at ${running.url} (Ctrl-C to stop)\n`);
    for (const l of links) process.stdout.write(`  ${l}\n`);
    if (names.length === 0) process.stdout.write(`  (no dataset or store found directly under ${root})\n`);
  }
  if (values.open) openBrowser(links[0] ?? running.url);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await running.close();
  return { text: "deltacells serve: stopped" };
}
