import type { StatsStore } from "@deltacells/storage";

/** What a command hands back to main: text for people, an object for `--json`, the store for `--stats`. */
export interface CommandResult {
  text: string;
  json?: unknown;
  store?: StatsStore;
  /** A second `--stats` line, for a command that counts its reads in parts (slice). */
  statsDetail?: string;
  /** The command wrote its output to stdout itself (`stream`): nothing more may be printed there. */
  streamed?: boolean;
  /** Non-zero when the command ran but its answer is "no" (validate on an invalid dataset). */
  exitCode?: number;
}
