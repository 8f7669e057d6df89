/**
 * Headless Chromium (the system's /usr/bin/chromium, installed by scripts/setup-browser.mjs)
 * driven by playwright-core, and a page wrapper that calls functions exported by a bundled
 * module and turns anything the page reports as an error into a failure of the call.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";

export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Flags that keep Chromium offline and quiet in a container (it otherwise dials Google). */
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Rejects with a message naming `what` when `promise` does not settle within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A running Chromium; `close()` is safe to call more than once. */
export interface RunningBrowser {
  readonly browser: Browser;
  close(): Promise<void>;
}

/**
 * Launches headless Chromium with a fresh profile directory. The limit only turns a launch that
 * never ends into a failure: generous, since it runs beside the bundling and other test files on a
 * loaded machine (CI's load reaches 20-30 on 2 cores, where a 15 s limit was tight).
 */
export async function launchChromium(timeoutMs = 60_000): Promise<RunningBrowser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `${CHROMIUM_PATH} is missing: run \`node scripts/setup-browser.mjs\` (npm test's pretest does) to install it`,
    );
  }
  // launch() runs Chromium on a fresh temporary profile (its own --user-data-dir), removed on close.
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    chromiumSandbox: false,
    args: CHROMIUM_ARGS,
    timeout: timeoutMs,
  });
  let closing: Promise<void> | undefined;
  return {
    browser,
    close: () =>
      // A wedged browser is given up on: playwright-core kills its child when the process exits.
      (closing ??= withTimeout(browser.close(), 10_000, "closing Chromium").catch(() => undefined)),
  };
}

/** An error the page reported: a console error, an uncaught exception or a crash. */
export interface PageProblem {
  kind: "console" | "pageerror" | "crash";
  text: string;
}

/** A page with one bundled module loaded; see {@link openModulePage}. */
export interface ModulePage {
  readonly page: Page;
  /** Everything the page reported as an error so far. */
  readonly problems: PageProblem[];
  /**
   * Calls `name(...args)` exported by the module in the page and returns its (JSON-able) result.
   * Fails when the call throws, takes longer than `timeoutMs`, or the page reports an error
   * meanwhile.
   */
  call<T>(name: string, ...args: unknown[]): Promise<T>;
  /** Like {@link call} with an explicit timeout. */
  callWithTimeout<T>(timeoutMs: number, name: string, ...args: unknown[]): Promise<T>;
  close(): Promise<void>;
}

export interface ModulePageOptions {
  /** The page to open (same origin as the module), e.g. the server's blank page. */
  pageUrl: string;
  /** The bundled module to import into the page. */
  moduleUrl: string;
  /**
   * Default timeout of each call (default 60 s: a limit that turns a hang into a failure, never a
   * measure of speed; a call of a second on an idle machine can take ten on CI's loaded one).
   */
  callTimeoutMs?: number;
  /** Console error texts that are expected and must not fail calls (e.g. a deliberate 404). */
  ignoreConsole?: RegExp[];
}

/** Limit of opening a page and importing its module: only there to turn a hang into a failure. */
const OPEN_TIMEOUT_MS = 60_000;

/** Default limit of a call (see {@link ModulePageOptions.callTimeoutMs}). */
const CALL_TIMEOUT_MS = 60_000;

/** The module's exports live on this global in the page. */
const MODULE_GLOBAL = "__browserTestModule";

/** Opens a page, imports `moduleUrl` into it and returns a handle to call its exports. */
export async function openModulePage(browser: Browser, opts: ModulePageOptions): Promise<ModulePage> {
  const page = await browser.newPage();
  const problems: PageProblem[] = [];
  const ignored = opts.ignoreConsole ?? [];
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    const text = msg.text();
    // Console messages of the page's Web Workers arrive here too.
    const from = msg.worker() ? `(worker ${msg.worker()?.url()}) ` : "";
    if (!ignored.some((re) => re.test(text))) problems.push({ kind: "console", text: from + text });
  });
  page.on("pageerror", (err) => problems.push({ kind: "pageerror", text: err.stack ?? err.message }));
  page.on("crash", () => problems.push({ kind: "crash", text: "the page crashed" }));
  page.setDefaultTimeout(opts.callTimeoutMs ?? CALL_TIMEOUT_MS);

  const failIfProblems = (what: string) => {
    if (problems.length === 0) return;
    const list = problems.map((p) => `  [${p.kind}] ${p.text}`).join("\n");
    problems.length = 0;
    throw new Error(`the page reported errors during ${what}:\n${list}`);
  };

  // Opening the page is not the call under test: a short callTimeoutMs (a test of the timeout
  // itself) must not apply to it, or a loaded machine fails the navigation instead.
  await page.goto(opts.pageUrl, { waitUntil: "load", timeout: OPEN_TIMEOUT_MS });
  await withTimeout(
    page.evaluate(
      async ([url, key]) => {
        (globalThis as Record<string, unknown>)[key] = await import(url);
      },
      [opts.moduleUrl, MODULE_GLOBAL] as const,
    ),
    OPEN_TIMEOUT_MS,
    `importing ${opts.moduleUrl}`,
  );
  failIfProblems(`the import of ${opts.moduleUrl}`);

  const callWithTimeout = async <T>(timeoutMs: number, name: string, ...args: unknown[]): Promise<T> => {
    const what = `${name}() in the page`;
    const result = await withTimeout(
      page.evaluate(
        async ([key, fn, a]) => {
          const mod = (globalThis as Record<string, unknown>)[key] as Record<string, unknown>;
          const f = mod[fn];
          if (typeof f !== "function") throw new Error(`the page module exports no function ${fn}`);
          return (await (f as (...x: unknown[]) => unknown)(...a)) as unknown;
        },
        [MODULE_GLOBAL, name, args] as const,
      ),
      timeoutMs,
      what,
    );
    failIfProblems(what);
    return result as T;
  };

  return {
    page,
    problems,
    callWithTimeout,
    call: (name, ...args) => callWithTimeout(opts.callTimeoutMs ?? CALL_TIMEOUT_MS, name, ...args),
    close: () => page.close().catch(() => undefined),
  };
}
