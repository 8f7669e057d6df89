/** Running the real `deltacells` command (as the CLI tests do: test-utils/command.ts) under a deadline. */
import { type ChildProcess, spawn } from "node:child_process";
import { COMMAND_ARGS } from "../../test-utils/command.js";
import { REPO } from "./fixtures.js";

export interface Spawned {
  child: ChildProcess;
  /** Exit code (null when killed), signal, stderr; `timedOut` when the deadline killed it. */
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; timedOut: boolean }>;
}

/** Starts `deltacells ARGS`; SIGKILLs it (and so never leaves it running) after `deadlineMs`. */
export function deltacells(args: string[], deadlineMs: number): Spawned {
  const child = spawn(process.execPath, [...COMMAND_ARGS, ...args], {
    cwd: REPO,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, DELTACELLS_DEBUG: "" },
  });
  let stderr = "";
  child.stderr!.on("data", (d) => {
    stderr += d;
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, deadlineMs);
  const done = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stderr: string;
    timedOut: boolean;
  }>((ok) =>
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      ok({ code, signal, stderr, timedOut });
    }),
  );
  return { child, done };
}

/** The `[Tag]` of the CLI's one-line error (`deltacells: error [Tag]: ...`), if any. */
export function cliTag(stderr: string): string | undefined {
  return /error \[([A-Za-z0-9_]+)\]/.exec(stderr)?.[1];
}
