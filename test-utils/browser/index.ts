/**
 * The real-browser test harness: bundle page modules with esbuild (refusing Node built-ins), serve
 * them and any fixtures from a temp directory over HTTP, drive them in headless Chromium.
 *
 * ```ts
 * let session: BrowserSession;
 * before(async () => {
 *   session = await startBrowserSession({ entryPoints: { page: "test/browser-page.ts" } });
 *   writeFileSync(join(session.dir, "a.bin"), bytes); // fixtures go next to the bundles
 * });
 * after(() => session?.close());
 * test("...", async () => {
 *   const page = await session.open("page");
 *   assert.deepEqual(await page.call("readA"), [...]);
 * });
 * ```
 * One session (one Chromium) per test file; it must be closed in `after`, also on failure.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium, type ModulePage, openModulePage, type RunningBrowser } from "./browser.js";
import { bundleForBrowser } from "./bundle.js";
import { BLANK_PAGE, type RouteHandler, type StaticServer, serveDirectory } from "./server.js";

export { launchChromium, type ModulePage, openModulePage, withTimeout } from "./browser.js";
export { BrowserBundleError, bundleForBrowser } from "./bundle.js";
export { BLANK_PAGE, type LoggedRequest, type RouteHandler, serveDirectory } from "./server.js";

export interface BrowserSessionOptions {
  /** Output name -> entry source file, bundled to `<dir>/<name>.js`. */
  entryPoints: Record<string, string>;
  /** Custom server answers (slow or failing responses), tried before the files. */
  route?: RouteHandler;
}

export interface OpenOptions {
  /** Serve the page with COOP/COEP so it is cross-origin isolated (SharedArrayBuffer exists). */
  crossOriginIsolated?: boolean;
  /** Console error texts that are expected (e.g. from a deliberate 404). */
  ignoreConsole?: RegExp[];
  callTimeoutMs?: number;
}

export interface BrowserSession {
  /** The served directory: bundles, plus whatever fixtures the test writes there. */
  readonly dir: string;
  /** The plain (not isolated) server. */
  readonly server: StaticServer;
  /** The server of isolated pages (started on first use). */
  isolatedServer(): Promise<StaticServer>;
  /** Opens a new page with the bundle `entry` imported into it. */
  open(entry: string, opts?: OpenOptions): Promise<ModulePage>;
  /** Closes pages, Chromium and servers and deletes the directory. Safe to call twice. */
  close(): Promise<void>;
}

/** The sessions of this process, started or still starting, for {@link closeBrowserSessions}. */
const sessions = new Set<Promise<BrowserSession>>();

/** Bundles the entries, starts the server and Chromium. Cleans up after itself if any step fails. */
export function startBrowserSession(opts: BrowserSessionOptions): Promise<BrowserSession> {
  const starting = start(opts);
  sessions.add(starting);
  starting.catch(() => sessions.delete(starting));
  return starting;
}

/**
 * Closes every session of this process, waiting for one still starting: what a test file's `after`
 * hook calls. A `before` hook that timed out leaves its session starting, unassigned: closed only
 * here, or its Chromium would keep the file's process alive for ever.
 */
export async function closeBrowserSessions(): Promise<void> {
  await Promise.allSettled([...sessions].map(async (starting) => (await starting).close()));
}

async function start(opts: BrowserSessionOptions): Promise<BrowserSession> {
  const dir = mkdtempSync(join(tmpdir(), "deltacells-browser-"));
  const servers: StaticServer[] = [];
  const pages: ModulePage[] = [];
  let chromium: RunningBrowser | undefined;
  let isolated: Promise<StaticServer> | undefined;
  let closing: Promise<void> | undefined;

  const close = () =>
    (closing ??= (async () => {
      await Promise.allSettled(pages.map((p) => p.close()));
      await chromium?.close();
      await Promise.allSettled(servers.map((s) => s.close()));
      rmSync(dir, { recursive: true, force: true });
    })());

  const track = (s: StaticServer) => {
    servers.push(s);
    return s;
  };
  // Every step is waited for, even after one failed: a server or Chromium that started after the
  // cleanup ran would never be closed and would keep the test file's process alive for ever.
  const steps = await Promise.allSettled([
    serveDirectory(dir, { route: opts.route }).then(track),
    launchChromium().then((b) => (chromium = b)),
    bundleForBrowser({ entryPoints: opts.entryPoints, outdir: dir }),
  ]);
  const failed = steps.find((s) => s.status === "rejected");
  if (failed) {
    await close();
    throw failed.reason;
  }
  const server = servers[0]!;
  const browser = chromium!;
  const isolatedServer = () =>
    (isolated ??= serveDirectory(dir, { route: opts.route, crossOriginIsolated: true }).then(track));
  return {
    dir,
    server,
    isolatedServer,
    close,
    async open(entry, o = {}) {
      const base = o.crossOriginIsolated ? (await isolatedServer()).url : server.url;
      const page = await openModulePage(browser.browser, {
        pageUrl: base + BLANK_PAGE,
        moduleUrl: `${base}/${entry}.js`,
        ignoreConsole: o.ignoreConsole,
        callTimeoutMs: o.callTimeoutMs,
      });
      pages.push(page);
      return page;
    },
  };
}
