#!/usr/bin/env bash
# The one command for a GPU machine.
#   scripts/gpu-check.sh build   # here (needs Go): test and bench binaries into bin/gpu-check/
#   scripts/gpu-check.sh run     # on the GPU machine (needs only the driver): the steps below,
#                                # each under its own time limit and all within
#                                # GPU_CHECK_DEADLINE seconds (560), and
#                                # a report in $OUT (default bin/gpu-check/report)
# `scripts/gpu-check.sh` alone does both. Through the device tool: build here,
# then run `OUT=$OUT scripts/gpu-check.sh run` carrying bin/gpu-check/cuda.test
# and bin/gpu-check/corl.xz (47 MB), with a 600 s limit.
#
# The steps: the conformance suite on the real driver, with cuBLAS and with
# corl's own GEMM kernel; on Qwen2.5-0.5B's and 1.5B's shapes (random
# weights), generated tokens/s at batch 1, 64 and 256 (512 new tokens; for
# the 0.5B shape also with bf16 weights at batch 1 and with bf16 matmuls,
# cublasGemmEx on tensor cores, at batch 256, and with a binary16 KV
# cache at batch 64) and a
# training step's tokens/s and GFLOP/s at 4 x 1,024 tokens (a GRPO update's
# work per token: forward, backward, AdamW; on the 1.5B shape also with
# bf16 matmuls through cublasGemmEx, and with LoRA r 16 and recompute); one Co-RL round of two random
# Qwen2.5-0.5B-shaped members through `corl dev`; the peak GPU memory
# nvidia-smi saw. A step past its limit is reported as such and the next
# one runs. GPU_CHECK_SMALL=1 swaps the shapes for tiny ones, to try the
# script itself on the emulated driver (CORL_CUDA_DRIVER=.tools/cudaemu/libcudaemu.so).
set -uo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."
out=bin/gpu-check

# build writes the test binary and corl with its embedded Temporal server
# (the round runs through corl dev), xz-compressed: 47 MB together, inside
# what a device call carries.
build() {
  mkdir -p "$out"
  rm -f "$out/corl" "$out/corl.xz"
  CGO_ENABLED=0 go test -c -o "$out/cuda.test" ./gpu/cuda || return 1
  CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/corl" ./cmd/corl || return 1
  xz -T0 -6 "$out/corl" || return 1
  echo "built $out/cuda.test and $out/corl.xz"
}

# unpack restores corl from corl.xz (xz, or Python's lzma where xz is absent).
unpack() {
  [ -x "$out/corl" ] && return 0
  if command -v xz >/dev/null; then
    xz -dc "$out/corl.xz" >"$out/corl"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$out/corl.xz" "$out/corl"
  fi && chmod +x "$out/corl"
}

rows=()
deadline=$(($(date +%s) + ${GPU_CHECK_DEADLINE:-560}))
# step NAME LIMIT PATTERN CMD...: runs CMD under LIMIT seconds, its stderr
# into the log, and adds a row with the first line of its output matching
# PATTERN (grep -E; "" for the last line) and its time.
step() {
  local name=$1 limit=$2 pat=$3 start res rc
  shift 3
  start=$(date +%s)
  # Every step ends by the run's deadline, so the report is written
  # before whoever lent the machine stops it.
  local left=$((deadline - start))
  if [ "$left" -lt 10 ]; then
    rows+=("| $name | skipped: the run's ${GPU_CHECK_DEADLINE:-560} s were spent | 0 s |")
    echo "$name: skipped (out of time)"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit}s): $*" >>"$log"
  timeout "$limit" "$@" >"$rep/step.out" 2>>"$log"
  rc=$?
  cat "$rep/step.out" >>"$log"
  if [ -n "$pat" ]; then res=$(grep -m1 -E "$pat" "$rep/step.out"); else res=$(tail -1 "$rep/step.out"); fi
  case $rc in
    0) ;;
    124) res="timed out after ${limit}s" ;;
    *) res="failed (exit $rc, see log): ${res}" ;;
  esac
  rows+=("| $name | ${res//|/\\|} | $(($(date +%s) - start)) s |")
  echo "$name: $res"
}

# The steps run as this script's own subcommands, so that timeout stops
# them and everything they started (it signals its process group).
conformance() { # cuBLAS: "" (where present) or off
  (cd gpu/cuda && CORL_CUBLAS=$1 "../../$out/cuda.test" -test.count=1 -test.v -test.run 'TestConformance$') >"$rep/conformance-${1:-cublas}.log" 2>&1
  local rc=$?
  grep -E '^--- (PASS|FAIL|SKIP): TestConformance' "$rep/conformance-${1:-cublas}.log" | head -1
  grep -E '^\s+--- FAIL' "$rep/conformance-${1:-cublas}.log" | head -5
  return $rc
}

coround() {
  local d="$rep/round" corl
  corl=$(realpath "$out/corl")
  rm -rf "$d" && mkdir -p "$d"
  for s in 1 2; do "$corl" model random $RANDOM_ARGS --seed $s --tokenizer bytes --out "$d/m$s" >/dev/null || return 1; done
  cat >"$d/round.yaml" <<EOF
name: gpu-check-round
seed: 1
rounds: 1
prompts_per_round: 16
data: {tasks: [arith], rl_size: 64, max_level: 1}
reward: {mode: peer-ring}
generation: {num_generations: 4, temperature: 1.0, max_completion_length: 64}
eval: {every: 1, size: 32, samples: 1}
checkpoint: {every: 1}
members:
  - {name: a, base: m1}
  - {name: b, base: m2}
EOF
  (cd "$d" && "$corl" dev --backend cuda --dir dev --headless --port 0 >dev.log 2>&1) &
  local dev=$! where=""
  for _ in $(seq 60); do # corl dev prints how to start a run on it
    where=$(sed -n 's/.*start a run: corl run -f run.yaml //p' "$d/dev.log" | head -1)
    [ -n "$where" ] && break
    sleep 1
  done
  if [ -z "$where" ]; then
    kill "$dev" 2>/dev/null
    echo "corl dev did not start (see $d/dev.log)"
    return 1
  fi
  local start rc
  start=$(date +%s)
  # shellcheck disable=SC2086 # --address A --store-dir S, as corl dev printed them
  (cd "$d" && "$corl" run -f round.yaml $where --wait) >"$d/run.log" 2>&1
  rc=$?
  kill "$dev" 2>/dev/null
  wait "$dev" 2>/dev/null
  tail -3 "$d/run.log" >&2
  echo "one round of two members through corl dev: exit $rc, $(($(date +%s) - start)) s from start to finish"
  return $rc
}

run() {
  unpack || { echo "cannot unpack $out/corl.xz" >&2; return 1; }
  rep=${OUT:-$out/report}
  mkdir -p "$rep"
  log="$rep/log"
  : >"$log"
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi")
  echo "device: $gpu" | tee -a "$log"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$rep/memory-used-mib.csv" 2>/dev/null &
  local sampler=$!
  local q05=(--family llama --layers 24 --dim 896 --heads 14 --kv-heads 2 --hidden 4864 --vocab 151936 --qkv-bias --tied)
  local q15=(--family llama --layers 28 --dim 1536 --heads 12 --kv-heads 2 --hidden 8960 --vocab 151936 --qkv-bias --tied)
  local seq=1024 new=512
  export rep out RANDOM_ARGS="--shape qwen2.5-0.5b"
  if [ "${GPU_CHECK_SMALL:-}" = 1 ]; then
    q05=(--family llama --layers 2 --dim 64 --heads 4 --kv-heads 2 --vocab 300 --qkv-bias --tied)
    q15=(--family llama --layers 2 --dim 128 --heads 4 --kv-heads 2 --vocab 300 --qkv-bias --tied)
    seq=64 new=16
    printf '{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 512, "tie_word_embeddings": true}\n' >"$rep/small-config.json"
    RANDOM_ARGS="--config $rep/small-config.json"
  fi
  step "conformance, GEMM through cuBLAS" 120 '^--- ' "$self" _conformance ""
  step "conformance, corl's GEMM kernel" 90 '^--- ' "$self" _conformance off
  local flags
  for shape in 0.5b 1.5b; do
    if [ $shape = 0.5b ]; then flags=("${q05[@]}"); else flags=("${q15[@]}"); fi
    for b in 1 64 256; do
      step "generate, qwen2.5-$shape shape, batch $b, $new new tokens" 40 'generated tokens/s' \
        "$out/corl" bench generate --backend cuda "${flags[@]}" --batch $b --prompt-tokens 64 --new $new --reps 1 --warmup 0
    done
    if [ $shape = 0.5b ]; then
      step "generate, qwen2.5-$shape shape, bf16 weights, batch 1, $new new tokens" 30 'generated tokens/s' \
        "$out/corl" bench generate --backend cuda "${flags[@]}" --weights bf16 --batch 1 --prompt-tokens 64 --new $new --reps 1 --warmup 0
      step "generate, qwen2.5-$shape shape, bf16 matmuls (tensor cores), batch 256, $new new tokens" 30 'generated tokens/s' \
        "$out/corl" bench generate --backend cuda "${flags[@]}" --weights bf16-act --batch 256 --prompt-tokens 64 --new $new --reps 1 --warmup 0
      step "generate, qwen2.5-$shape shape, f16 KV cache, batch 64, $new new tokens" 30 'generated tokens/s' \
        "$out/corl" bench generate --backend cuda "${flags[@]}" --kv-cache f16 --batch 64 --prompt-tokens 64 --new $new --reps 1 --warmup 0
    fi
    step "training step, qwen2.5-$shape shape, 4 x $seq tokens (ms/step, tokens/s, GFLOP/s 6N, with attention, share of peak)" 60 '^[0-9.]+ +[0-9]' \
      "$out/corl" bench train --backend cuda "${flags[@]}" --batch 4 --seq $seq --steps 2 --warmup 1
    if [ $shape = 1.5b ]; then
      step "training step, qwen2.5-$shape shape, bf16 matmuls (cublasGemmEx, fp32 masters), 4 x $seq tokens" 45 '^[0-9.]+ +[0-9]' \
        "$out/corl" bench train --backend cuda "${flags[@]}" --bf16 --batch 4 --seq $seq --steps 2 --warmup 1
      step "training step, qwen2.5-$shape shape, LoRA r 16 on every projection, recompute, 4 x $seq tokens" 60 '^[0-9.]+ +[0-9]' \
        "$out/corl" bench train --backend cuda "${flags[@]}" --lora-rank 16 --recompute --logit-rows 1024 --batch 4 --seq $seq --steps 2 --warmup 1
    fi
  done
  step "Co-RL round, two qwen2.5-0.5b-shaped members, corl dev" 150 "" "$self" _coround
  kill "$sampler" 2>/dev/null
  local peak
  peak=$(sort -n "$rep/memory-used-mib.csv" 2>/dev/null | tail -1)
  {
    echo "# corl GPU check"
    echo
    echo "device: $gpu; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(date -u +%FT%TZ)"
    echo
    echo "| step | result | time |"
    echo "| --- | --- | --- |"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Peak GPU memory seen by nvidia-smi (every 0.5 s): ${peak:+$peak MiB}${peak:-not measured (no nvidia-smi)}."
    echo "MFU of a float32 training step = its GFLOP/s over the card's float32 peak without tensor cores"
    echo "(H100 SXM about 67,000 GFLOP/s); of a bf16-matmul step, over the dense bfloat16 tensor-core peak"
    echo "(H100 SXM about 989,000 GFLOP/s; H200 the same)."
  } >"$rep/report.md"
  cat "$rep/report.md"
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  all) build && run ;;
  _conformance) conformance "${2:-}" ;;
  _coround) coround ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
