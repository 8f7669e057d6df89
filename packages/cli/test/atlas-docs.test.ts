/**
 * The job scripts of docs/atlas.md, checked for shape, and the Slurm one run: with a stand-in
 * `sbatch` that records each submission and runs it at once (every array index in turn, with
 * SLURM_ARRAY_TASK_ID set), the documented chain converts real inputs into what one `convert`
 * writes, byte for byte, and each step waits for the one before (afterok).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { assertSameFiles, cli, MAIN, REPO, tempDir } from "./cli-helpers.js";

/** The fenced blocks of docs/atlas.md in `language`. */
export function blocks(language: string): string[] {
  const text = readFileSync(join(REPO, "docs/atlas.md"), "utf8");
  const out: string[] = [];
  const re = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, "g");
  for (let m = re.exec(text); m; m = re.exec(text)) out.push(m[1]!);
  return out;
}

test("the documented Slurm script submits scan array, merge, conversion array and finalize, each afterok the previous, and its chain converts the inputs as one convert does", async () => {
  const [script] = blocks("bash");
  assert.ok(script?.startsWith("#!/bin/bash"), "the Slurm script is the doc's bash block");
  const dir = tempDir();
  const bin = join(dir, "bin");
  execFileSync("mkdir", ["-p", bin]);
  const log = join(dir, "sbatch.log");
  writeFileSync(log, "");
  // sbatch: log the options, run --wrap now (each array index with SLURM_ARRAY_TASK_ID), print an id.
  writeFileSync(
    join(bin, "sbatch"),
    `#!/bin/bash
set -e
id=$(( $(wc -l < "${log}") + 100 ))
echo "$id $*" >> "${log}"
array=""; wrap=""
while [ $# -gt 0 ]; do
  case "$1" in
    --array=*) array="\${1#--array=}";;
    --wrap) wrap="$2"; shift;;
  esac
  shift
done
if [ -n "$array" ]; then
  range="\${array%%%*}"
  for i in $(seq "\${range%-*}" "\${range#*-}"); do SLURM_ARRAY_TASK_ID=$i bash -c "$wrap" > /dev/null; done
else
  bash -c "$wrap" > /dev/null
fi
echo "$id"
`,
  );
  writeFileSync(
    join(bin, "deltacells"),
    `#!/bin/bash\ncd "${REPO}" && exec "${process.execPath}" --import tsx --conditions=source "${MAIN}" "$@"\n`,
  );
  chmodSync(join(bin, "sbatch"), 0o755);
  chmodSync(join(bin, "deltacells"), 0o755);
  const inputs = [
    "data/pbmc68k-counts/pbmc68k_counts.h5ad",
    "data/10x-v3-chr21/filtered_feature_bc_matrix.h5",
    "data/anndata/csr.h5ad",
  ];
  const list = join(dir, "inputs.txt");
  writeFileSync(list, `# three studies\n${inputs.map((p) => join(REPO, p)).join("\n")}\n`);
  const out = join(dir, "atlas");
  const doc = join(dir, "atlas-slurm.sh");
  // The doc matches on gene_ids; these inputs share symbols: the same script, matching on the var index.
  writeFileSync(doc, script!.replace(" --var-key gene_ids", ""));
  execFileSync("bash", [doc, list, out, "3"], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    stdio: "pipe",
  });
  const calls = readFileSync(log, "utf8").trim().split("\n");
  assert.equal(calls.length, 4);
  assert.match(calls[0]!, /^100 .*--array=0-2%100 .*--wrap deltacells plan --scan --inputs /);
  assert.match(calls[1]!, /^101 .*--dependency=afterok:100 .*--wrap deltacells plan --merge .* --tasks 3/);
  assert.match(
    calls[2]!,
    /^102 .*--dependency=afterok:101 .*--array=0-2 .*--wrap deltacells convert --plan /,
  );
  assert.match(calls[3]!, /^103 .*--dependency=afterok:102 .*--wrap deltacells finalize /);
  const once = join(dir, "once");
  assert.equal((await cli("convert", "--inputs", list, once, "--quiet")).code, 0);
  assertSameFiles(once, out);
});

test("the documented AWS Batch job definition is a container job running a task of the plan, retried, with its output a parameter", () => {
  const [definition] = blocks("json");
  const job = JSON.parse(definition!) as {
    type: string;
    parameters: Record<string, string>;
    containerProperties: { command: string[]; resourceRequirements: { type: string; value: string }[] };
    retryStrategy: { attempts: number };
  };
  assert.equal(job.type, "container");
  assert.deepEqual(job.containerProperties.command.slice(0, 4), [
    "deltacells",
    "convert",
    "--plan",
    "Ref::output",
  ]);
  assert.match(job.parameters.output!, /^s3:\/\//);
  assert.ok(job.retryStrategy.attempts >= 2, "retries are safe and wanted");
  const vcpu = job.containerProperties.resourceRequirements.find((r) => r.type === "VCPU")!.value;
  const threads = job.containerProperties.command[job.containerProperties.command.indexOf("--threads") + 1];
  assert.equal(threads, vcpu, "one encoding thread per vCPU");
  const [submit] = blocks("sh").filter((b) => b.includes("aws batch submit-job"));
  assert.match(submit!, /--array-properties size=\d+ --depends-on jobId=/);
  assert.match(submit!, /command=\["deltacells","finalize",/);
});
