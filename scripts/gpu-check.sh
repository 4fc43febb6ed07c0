#!/usr/bin/env bash
# The one command for a GPU machine.
#   scripts/gpu-check.sh build   # here (needs Go): test and bench binaries into bin/gpu-check/
#   scripts/gpu-check.sh run     # on the GPU machine (needs only the driver): conformance suite,
#                                # benchmarks, then a short table
# `scripts/gpu-check.sh` alone does both.
set -uo pipefail
cd "$(dirname "$0")/.."
out=bin/gpu-check

build() {
  mkdir -p "$out"
  CGO_ENABLED=0 go test -c -o "$out/cuda.test" ./gpu/cuda
  CGO_ENABLED=0 go build -tags nodevserver -ldflags="-s -w" -o "$out/corl" ./cmd/corl
  echo "built $out/cuda.test and $out/corl"
}

run() {
  local log="$out/log"
  : >"$log"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee -a "$log" || true
  (cd gpu/cuda && "../../$out/cuda.test" -test.v -test.count=1) 2>&1 | tee -a "$log"
  conf=$(grep -E '^--- (PASS|FAIL|SKIP): TestConformance' "$log" | head -1)
  # Again with corl's own GEMM kernel instead of cuBLAS.
  (cd gpu/cuda && CORL_CUBLAS=off "../../$out/cuda.test" -test.v -test.count=1 -test.run 'TestConformance$') 2>&1 | tee "$out/log-own-gemm" | tee -a "$log"
  confown=$(grep -E '^--- (PASS|FAIL|SKIP): TestConformance' "$out/log-own-gemm" | head -1)
  fails=$(grep -cE '^\s*--- FAIL' "$log")
  train=$("$out/corl" bench train --backend cuda --family gpt2 --layers 12 --dim 768 --heads 12 --vocab 50257 \
    --batch 16 --seq 1024 --steps 5 --warmup 1 2>>"$log" | tail -1)
  small=$("$out/corl" bench train --backend cuda --steps 20 2>>"$log" | tail -1)
  gen=$("$out/corl" bench generate --backend cuda --batch 256 --prompt-tokens 128 --new 32 2>>"$log" | tail -1)
  cpugen=$("$out/corl" bench generate --backend cpu --batch 64 --reps 1 2>>"$log" | tail -1)
  echo
  echo "| check | result |"
  echo "| --- | --- |"
  echo "| conformance (GEMM through cuBLAS where present) | ${conf:-not run} ($fails failing subtests in all) |"
  echo "| conformance, corl's own GEMM kernel | ${confown:-not run} |"
  echo "| train GPT-2 124M, B16 T1024 (ms/step tok/s GFLOP/s) | ${train:-failed} |"
  echo "| train small config (ms/step tok/s GFLOP/s) | ${small:-failed} |"
  echo "| generate small config, batch 256 | ${gen:-failed} |"
  echo "| generate on the host CPU, batch 64 | ${cpugen:-failed} |"
  echo "(H200 FP32 peak without tensor cores is ~67 TFLOP/s: MFU = GFLOP/s / 67000)"
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  all) build && run ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
