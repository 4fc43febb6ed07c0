#!/usr/bin/env bash
# Runs examples/paper-table.yaml from nothing to results/paper-table/: a
# corl dev (its worker on one thread; Temporal and blobs in
# corl-data/paper-table, so a stopped run resumes where it stopped when this
# is run again), a second one-thread worker (a pair's members then generate
# and update side by side on the two cores), the sweep (cells already
# completed are skipped; a sweep still running is watched), and the report
# of member llama-odd, the model every method trains. The CORL_PAPER_*
# variables run another sweep the same way (make composition). When the
# output directory already holds runs.jsonl.gz (cells committed by an
# earlier session, perhaps on another machine), those cells are not run
# again and the report covers them and the new ones together.
set -euo pipefail
cd "$(dirname "$0")/.."
corl=${CORL:-bin/corl}
dir=${CORL_PAPER_DIR:-corl-data/paper-table}
port=${CORL_PAPER_PORT:-7243}
out=${CORL_PAPER_OUT:-results/paper-table}
sweep=${CORL_PAPER_SWEEP:-examples/paper-table.yaml}
member=${CORL_PAPER_MEMBER:-llama-odd}
name=$(sed -n 's/^name: *//p' "$sweep" | head -n 1)
addr="127.0.0.1:$port"
mkdir -p "$dir" "$out"
"$corl" dev --dir "$dir" --port "$port" --threads 1 --headless --metrics "" >>"$dir/dev.log" 2>&1 &
dev=$!
worker=""
cleanup() {
  # SIGTERM: each worker finishes its activity and checkpoints what it holds.
  [ -n "$worker" ] && kill -TERM "$worker" 2>/dev/null || true
  kill -INT "$dev" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 600); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  if ! kill -0 "$dev" 2>/dev/null; then echo "corl dev exited; see $dir/dev.log" >&2; exit 1; fi
  sleep 0.2
done
started=$(grep -c '^gpu worker on' "$dir/worker.log" 2>/dev/null || true)
"$corl" worker --address "$addr" --store-dir "$dir/blobs" --threads 1 --queue-id paper-table-2 >>"$dir/worker.log" 2>&1 &
worker=$!
# Placement reads the pool's workers once, when a run starts: a sweep
# started before the second worker polls would put every member on the
# first (one core) for the whole run.
for _ in $(seq 1 300); do
  [ "$(grep -c '^gpu worker on' "$dir/worker.log" 2>/dev/null || true)" -gt "${started:-0}" ] && break
  if ! kill -0 "$worker" 2>/dev/null; then echo "corl worker exited; see $dir/worker.log" >&2; exit 1; fi
  sleep 0.2
done
sleep 2 # its first poll reaches the server
recorded=()
sources=("sweep-$name")
if [ -f "$out/runs.jsonl.gz" ]; then
  recorded=(--recorded "$out")
  sources=("$out" "sweep-$name")
fi
"$corl" sweep -f "$sweep" --address "$addr" --store-dir "$dir/blobs" "${recorded[@]}" --wait
"$corl" report "${sources[@]}" --member "$member" --address "$addr" --store-dir "$dir/blobs" \
  -o "$out/report.html" --md "$out/report.md" --json "$out/results.json" --csv "$out/results.csv" --records "$out/runs.jsonl.gz"
cp "$sweep" "$(dirname "$sweep")/$(sed -n 's/^base: *//p' "$sweep" | head -n 1)" "$out/"
git rev-parse HEAD >"$out/commit" 2>/dev/null || true
echo "results in $out"
