/** The Kubernetes Indexed Job of docs/atlas.md, parsed as YAML (PyYAML) and checked for shape. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { blocks } from "./atlas-docs.test.js";
import { PYTHON } from "./cli-helpers.js";

test("the documented Kubernetes manifest is an Indexed Job whose pods each run one task of the plan, never restarted in place", () => {
  const [manifest] = blocks("yaml");
  const json = execFileSync(
    PYTHON,
    ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))"],
    {
      input: manifest,
      encoding: "utf8",
    },
  );
  const job = JSON.parse(json) as {
    apiVersion: string;
    kind: string;
    spec: {
      completionMode: string;
      completions: number;
      parallelism: number;
      template: { spec: { restartPolicy: string; containers: { command: string[] }[] } };
    };
  };
  assert.equal(job.apiVersion, "batch/v1");
  assert.equal(job.kind, "Job");
  assert.equal(job.spec.completionMode, "Indexed");
  assert.ok(job.spec.completions >= job.spec.parallelism && job.spec.parallelism >= 1);
  assert.equal(job.spec.template.spec.restartPolicy, "Never");
  assert.deepEqual(job.spec.template.spec.containers[0]!.command.slice(0, 3), [
    "deltacells",
    "convert",
    "--plan",
  ]);
  assert.ok(
    !job.spec.template.spec.containers[0]!.command.includes("--task"),
    "the index comes from JOB_COMPLETION_INDEX",
  );
});
