/**
 * The Kubernetes Jobs of docs/atlas.md (examples/atlas), parsed as YAML (PyYAML) and checked for
 * shape: the Indexed Job of the conversion tasks, and finalize's.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { TASK_INDEX_VARIABLES } from "../src/atlas-options.js";
import { assertFinalizeResources, assertTaskResources, example } from "./atlas-examples.js";
import { PYTHON } from "./cli-helpers.js";

/** A Kubernetes quantity of memory (`2Gi`, `2048Mi`, `2G`) in MiB. */
function mebibytes(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(q);
  assert.ok(m, `a memory quantity: ${q}`);
  const unit = { Ki: 1 / 1024, Mi: 1, Gi: 1024, K: 1e3 / 2 ** 20, M: 1e6 / 2 ** 20, G: 1e9 / 2 ** 20 };
  return Number(m[1]) * (m[2] ? unit[m[2] as keyof typeof unit] : 1 / 2 ** 20);
}

/** An example's manifest, parsed by PyYAML. */
function manifest(name: string): unknown {
  const json = execFileSync(
    PYTHON,
    ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))"],
    { input: example(name), encoding: "utf8" },
  );
  return JSON.parse(json);
}

/** The fields of a Kubernetes Job the tests read. */
interface JobManifest {
  apiVersion: string;
  kind: string;
  spec: {
    completionMode?: string;
    completions?: number;
    parallelism?: number;
    backoffLimit?: number;
    backoffLimitPerIndex?: number;
    template: {
      spec: {
        restartPolicy: string;
        containers: {
          image: string;
          command: string[];
          env: { name: string; value: string }[];
          envFrom: { secretRef: { name: string } }[];
          resources: { requests: { cpu: string; memory: string }; limits: { memory: string } };
        }[];
      };
    };
  };
}

test("the Kubernetes manifest is an Indexed Job whose pods each run one task of the plan (the index from JOB_COMPLETION_INDEX, the output from the environment), never restarted in place, with the documented resources", () => {
  const job = manifest("kubernetes-indexed-job.yaml") as JobManifest;
  assert.equal(job.apiVersion, "batch/v1");
  assert.equal(job.kind, "Job");
  assert.equal(job.spec.completionMode, "Indexed");
  const { completions = 0, parallelism = 0, backoffLimitPerIndex = 0 } = job.spec;
  assert.ok(completions >= parallelism && parallelism >= 1);
  assert.ok(backoffLimitPerIndex >= 1, "a failed index is retried: reruns are safe");
  assert.equal(job.spec.template.spec.restartPolicy, "Never");
  const [container] = job.spec.template.spec.containers;
  assert.match(container!.image, /deltacells/);
  assert.deepEqual(container!.command.slice(0, 4), ["deltacells", "convert", "--plan", "$(OUTPUT)"]);
  assert.match(container!.env.find((e) => e.name === "OUTPUT")!.value, /^s3:\/\//);
  assert.ok(container!.env.some((e) => e.name === "AWS_REGION"));
  assert.ok(
    container!.envFrom.some((e) => e.secretRef.name !== ""),
    "the S3 keys from a Secret",
  );
  assert.ok(!container!.command.includes("--task"), "the index comes from JOB_COMPLETION_INDEX");
  assert.ok(TASK_INDEX_VARIABLES.includes("JOB_COMPLETION_INDEX"));
  const { requests, limits } = container!.resources;
  assertTaskResources("kubernetes-indexed-job.yaml", {
    cores: Number(requests.cpu),
    threads: Number(container!.command[container!.command.indexOf("--threads") + 1]),
    memoryMiB: mebibytes(requests.memory),
  });
  assert.ok(mebibytes(limits.memory) >= mebibytes(requests.memory));
  const batch = JSON.parse(example("aws-batch-job-definition.json"));
  const batchMemory = batch.containerProperties.resourceRequirements.find(
    (r: { type: string }) => r.type === "MEMORY",
  ).value;
  assert.equal(mebibytes(requests.memory), Number(batchMemory), "the same sizing as on AWS Batch");
});

test("the Kubernetes finalize is a Job of one pod, not retried, running finalize --sporadik on the conversion's output with the documented resources", () => {
  const job = manifest("kubernetes-finalize-job.yaml") as JobManifest;
  const convert = manifest("kubernetes-indexed-job.yaml") as JobManifest;
  assert.equal(job.apiVersion, "batch/v1");
  assert.equal(job.kind, "Job");
  assert.equal(job.spec.completionMode, undefined, "one pod, no index");
  assert.ok((job.spec.completions ?? 1) === 1 && (job.spec.parallelism ?? 1) === 1);
  // A finalize killed outright leaves its writer locks: a retry would be refused by them.
  assert.equal(job.spec.backoffLimit, 0);
  assert.equal(job.spec.template.spec.restartPolicy, "Never");
  const [container] = job.spec.template.spec.containers;
  const [task] = convert.spec.template.spec.containers;
  assert.equal(container!.image, task!.image);
  assert.equal(container!.command[2], "$(OUTPUT)");
  assert.deepEqual(container!.env, task!.env, "the conversion's output, region and keys");
  assert.deepEqual(container!.envFrom, task!.envFrom);
  const { requests, limits } = container!.resources;
  assertFinalizeResources("kubernetes-finalize-job.yaml", {
    command: container!.command,
    cores: Number(requests.cpu),
    memoryMiB: mebibytes(requests.memory),
  });
  assert.ok(mebibytes(limits.memory) >= mebibytes(requests.memory));
});
