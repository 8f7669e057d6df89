/**
 * The scheduler examples of docs/atlas.md: the files of examples/atlas, shown in the doc as they
 * are; the AWS Batch job definition checked for shape; the Slurm script run with a stand-in
 * `sbatch` that records each submission and runs it at once (every array index in turn, with
 * SLURM_ARRAY_TASK_ID set): the documented chain converts real inputs into what one `convert
 * --sporadik` writes, byte for byte, each step submitted after the one before (afterok), and `--rerun`
 * submits the tasks named and finalize after them; each example's finalize writes the companion
 * (--sporadik) with the documented resources. The same script on a real Slurm cluster is
 * atlas-slurm.conformance.test.ts; the Kubernetes manifests, parsed as YAML, are
 * atlas-docs.conformance.test.ts.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { TASK_INDEX_VARIABLES } from "../src/atlas-options.js";
import { assertFinalizeResources, assertTaskResources, blocks, example } from "./atlas-examples.js";
import { assertSameFiles, COMMAND_LINE, cli, REPO, tempDir } from "./cli-helpers.js";

test("docs/atlas.md shows the Slurm script, the AWS Batch job definition and the Kubernetes manifests of examples/atlas as they are", () => {
  assert.deepEqual(blocks("bash"), [example("atlas-slurm.sh")]);
  assert.deepEqual(blocks("json"), [example("aws-batch-job-definition.json")]);
  assert.deepEqual(blocks("yaml"), [
    example("kubernetes-indexed-job.yaml"),
    example("kubernetes-finalize-job.yaml"),
  ]);
});

test("the Slurm script submits scan array, merge, conversion array and finalize, each afterok the previous, and its chain converts the inputs as one convert --sporadik does; --rerun submits the tasks named, then finalize", async () => {
  const dir = tempDir();
  const bin = join(dir, "bin");
  execFileSync("mkdir", ["-p", bin]);
  const log = join(dir, "sbatch.log");
  writeFileSync(log, "");
  // sbatch: log the options, run --wrap now (each array index with SLURM_ARRAY_TASK_ID) unless
  // RECORD_ONLY is set, print an id.
  writeFileSync(
    join(bin, "sbatch"),
    `#!/bin/bash
set -e
id=$(( $(wc -l < "${log}") + 100 ))
echo "$id $*" >> "${log}"
if [ -n "$RECORD_ONLY" ]; then echo "$id"; exit 0; fi
array=""; wrap=""
while [ $# -gt 0 ]; do
  case "$1" in
    --array=*) array="\${1#--array=}";;
    --wrap) wrap="$2"; shift;;
  esac
  shift
done
if [ -n "$array" ]; then
  for part in $(echo "\${array%%%*}" | tr , ' '); do
    for i in $(seq "\${part%-*}" "\${part#*-}"); do SLURM_ARRAY_TASK_ID=$i bash -c "$wrap" > /dev/null; done
  done
else
  bash -c "$wrap" > /dev/null
fi
echo "$id"
`,
  );
  writeFileSync(join(bin, "deltacells"), `#!/bin/bash\ncd "${REPO}" && exec ${COMMAND_LINE} "$@"\n`);
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
  const script = join(REPO, "examples/atlas/atlas-slurm.sh");
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, THREADS: "2", RECORD_ONLY: "" };
  // These inputs share symbols: matched on the var index (no --var-key).
  const printed = execFileSync("bash", [script, list, out, "3", "--level", "9"], { env, encoding: "utf8" });
  assert.equal(
    printed,
    "scan: job 100 (3 tasks); merge: job 101\nconvert: job 102 (tasks 0-2); finalize: job 103\n",
  );
  const calls = readFileSync(log, "utf8").trim().split("\n");
  assert.equal(calls.length, 4);
  assert.match(
    calls[0]!,
    /^100 .*--array=0-2%100 .*--wrap deltacells plan --scan --inputs \S+ \S+ --level 9$/,
  );
  assert.match(
    calls[1]!,
    /^101 .*--dependency=afterok:100 .*--wrap deltacells plan --merge --inputs \S+ \S+ --level 9 --tasks 3$/,
  );
  assert.match(
    calls[2]!,
    /^102 .*--dependency=afterok:101 .*--array=0-2 --cpus-per-task=2 .*--wrap deltacells convert --plan \S+ --threads 2$/,
  );
  assert.match(
    calls[3]!,
    /^103 .*--dependency=afterok:102 .*--cpus-per-task=2 .*--wrap deltacells finalize \S+ --sporadik --threads 2$/,
  );
  const once = join(dir, "once");
  const converted = await cli("convert", "--inputs", list, once, "--level", "9", "--sporadik", "--quiet");
  assert.equal(converted.code, 0, converted.stderr);
  assertSameFiles(once, out);

  // The submissions of --rerun only: its tasks would refuse to run on a finalized dataset.
  const again = execFileSync("bash", [script, "--rerun", "1,2", out], {
    env: { ...env, THREADS: "1", RECORD_ONLY: "1" },
  });
  assert.equal(again.toString(), "convert: job 104 (tasks 1,2); finalize: job 105\n");
  const reruns = readFileSync(log, "utf8").trim().split("\n").slice(4);
  assert.equal(reruns.length, 2);
  assert.doesNotMatch(reruns[0]!, /--dependency/);
  assert.match(
    reruns[0]!,
    /^104 .*--array=1,2 --cpus-per-task=1 .*--wrap deltacells convert --plan \S+ --threads 1$/,
  );
  assert.match(
    reruns[1]!,
    /^105 .*--dependency=afterok:104 .*--wrap deltacells finalize \S+ --sporadik --threads 1$/,
  );
  assertSameFiles(once, out);
});

test("the Slurm script asks for the documented sizing: 8 cores and 2 GB a conversion task by default, 8 cores and 8 GB for finalize --sporadik", () => {
  const script = example("atlas-slurm.sh");
  assert.match(script, /^THREADS=\$\{THREADS:-8\}$/m);
  const convert = /--job-name=atlas-convert[^)]*/.exec(script)![0];
  const cores = /--cpus-per-task="\$THREADS"/.test(convert) ? 8 : Number.NaN;
  const threads = /--threads \$THREADS/.test(convert) ? 8 : Number.NaN;
  const memory = /--mem=(\d+)G/.exec(convert);
  assertTaskResources("atlas-slurm.sh", { cores, threads, memoryMiB: Number(memory?.[1]) * 1024 });
  const finalizeMemory = /^FINALIZE_MEM=\$\{FINALIZE_MEM:-(\d+)G\}$/m.exec(script);
  const finalize = /--job-name=atlas-finalize[^)]*/.exec(script)![0];
  const wrap = /--wrap "([^"]*)"/.exec(finalize)![1]!.replaceAll("$THREADS", "8");
  assertFinalizeResources("atlas-slurm.sh", {
    command: wrap.split(" "),
    cores: /--cpus-per-task="\$THREADS"/.test(finalize) ? 8 : Number.NaN,
    memoryMiB: /--mem="\$FINALIZE_MEM"/.test(finalize) ? Number(finalizeMemory?.[1]) * 1024 : Number.NaN,
  });
});

test("the AWS Batch job definition is a container job running a task of the plan whose index is the array's, retried, with its output a parameter, S3 keys as secrets and the documented resources", () => {
  const job = JSON.parse(example("aws-batch-job-definition.json")) as {
    type: string;
    parameters: Record<string, string>;
    containerProperties: {
      image: string;
      command: string[];
      environment: { name: string; value: string }[];
      secrets: { name: string; valueFrom: string }[];
      executionRoleArn?: string;
      resourceRequirements: { type: string; value: string }[];
    };
    retryStrategy: { attempts: number };
  };
  assert.equal(job.type, "container");
  const c = job.containerProperties;
  assert.match(c.image, /deltacells/);
  assert.deepEqual(c.command.slice(0, 4), ["deltacells", "convert", "--plan", "Ref::output"]);
  assert.ok(!c.command.includes("--task"), "the index comes from the array job");
  assert.ok(TASK_INDEX_VARIABLES.includes("AWS_BATCH_JOB_ARRAY_INDEX"));
  assert.match(job.parameters.output!, /^s3:\/\//);
  assert.ok(c.environment.some((e) => e.name === "AWS_REGION"));
  assert.deepEqual(c.secrets.map((s) => s.name).sort(), ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]);
  assert.ok(c.executionRoleArn, "the execution role reads the secrets");
  assert.ok(job.retryStrategy.attempts >= 2, "retries are safe and wanted");
  const resource = (type: string) => Number(c.resourceRequirements.find((r) => r.type === type)!.value);
  assertTaskResources("aws-batch-job-definition.json", {
    cores: resource("VCPU"),
    threads: Number(c.command[c.command.indexOf("--threads") + 1]),
    memoryMiB: resource("MEMORY"),
  });
  const [submit] = blocks("sh").filter((b) => b.includes("aws batch submit-job"));
  assert.match(submit!, /--array-properties size=\d+ --depends-on jobId=/);
  // finalize: the same definition with its own command and resources, not retried
  const finalize = submit!.slice(submit!.indexOf("--job-name atlas-finalize"));
  assert.match(finalize, /--retry-strategy attempts=1 /);
  const overrides = JSON.parse(/--container-overrides '([^']*)'/.exec(finalize)![1]!) as {
    command: string[];
    resourceRequirements: { type: string; value: string }[];
  };
  const overridden = (type: string) =>
    Number(overrides.resourceRequirements.find((r) => r.type === type)?.value ?? resource(type));
  assertFinalizeResources("the AWS Batch finalize", {
    command: overrides.command,
    cores: overridden("VCPU"),
    memoryMiB: overridden("MEMORY"),
  });
});
