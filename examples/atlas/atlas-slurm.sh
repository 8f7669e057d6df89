#!/bin/bash
# Many inputs into one deltacells dataset on a Slurm cluster (docs/atlas.md):
#   atlas-slurm.sh LIST OUT [TASKS [OPTION...]]   convert the inputs listed in LIST (one a line) into OUT
#   atlas-slurm.sh --rerun I[,J...] OUT           run the conversion tasks finalize named again, then finalize
# OUT is a folder every node sees, or an s3:// prefix. Four jobs, each once the one before has
# succeeded (afterok): a scan array (one task per input), the merge (the plan of TASKS tasks,
# default 64), the conversion array and finalize with --sporadik (the manifest, then the companion
# the viewer reads, its statistics and its rows in embedding order). OPTIONs go to the scan and the
# merge, which take the same ones (e.g. --var-key gene_ids --level 9). THREADS (default 8): the
# cores of a conversion task and of finalize; FINALIZE_MEM (default 8G): finalize's memory.
# The jobs get this shell's environment (sbatch's --export=ALL): deltacells on the PATH, and for
# s3:// the AWS settings (AWS_PROFILE or keys, AWS_REGION, AWS_ENDPOINT_URL for other S3 services).
set -euo pipefail
THREADS=${THREADS:-8}
FINALIZE_MEM=${FINALIZE_MEM:-8G}
if [ "${1-}" = --rerun ]; then
  ARRAY=$2
  OUT=$3
  after=()
else
  LIST=$1
  OUT=$2
  TASKS=${3:-64}
  shift $(($# < 3 ? $# : 3))
  printf -v ARGS ' %q' --inputs "$LIST" "$OUT" "$@"
  N=$(grep -cvE '^[[:space:]]*(#|$)' "$LIST" || true)
  if [ "$N" -eq 0 ]; then
    echo "atlas-slurm.sh: $LIST lists no input" >&2
    exit 1
  fi
  scan=$(sbatch --parsable --job-name=atlas-scan --array=0-$((N - 1))%100 --requeue \
    --cpus-per-task=1 --mem=2G --time=02:00:00 --wrap "deltacells plan --scan$ARGS")
  merge=$(sbatch --parsable --job-name=atlas-merge --dependency=afterok:$scan \
    --cpus-per-task=1 --mem=2G --time=01:00:00 --wrap "deltacells plan --merge$ARGS --tasks $TASKS")
  echo "scan: job $scan ($N tasks); merge: job $merge"
  ARRAY=0-$((TASKS - 1))
  after=(--dependency=afterok:$merge)
fi
printf -v Q %q "$OUT"
convert=$(sbatch --parsable --job-name=atlas-convert "${after[@]}" --requeue --array="$ARRAY" \
  --cpus-per-task="$THREADS" --mem=2G --time=04:00:00 --wrap "deltacells convert --plan $Q --threads $THREADS")
finalize=$(sbatch --parsable --job-name=atlas-finalize --dependency=afterok:$convert \
  --cpus-per-task="$THREADS" --mem="$FINALIZE_MEM" --time=04:00:00 \
  --wrap "deltacells finalize $Q --sporadik --threads $THREADS")
echo "convert: job $convert (tasks $ARRAY); finalize: job $finalize"
