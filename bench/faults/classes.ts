/** What every fault class module exports. */
import type { CaseResult } from "./outcome.js";

export interface RunOptions {
  seed: number;
  /** The long case counts instead of the bounded CI counts. */
  long: boolean;
  /** Overrides the mode's number of cases (where a class draws its cases). */
  cases?: number;
  /** Progress lines (the runner prints them; the test keeps quiet). */
  log: (line: string) => void;
}

export interface FaultClass {
  name: string;
  /** What is damaged, and how an outcome is judged: one sentence for the report. */
  summary: string;
  /** Needs conformance/.venv (the CI test then runs it in the conformance suite). */
  needsPython?: boolean;
  run(options: RunOptions): Promise<CaseResult[]>;
}
