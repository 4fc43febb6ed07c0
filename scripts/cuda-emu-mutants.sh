#!/usr/bin/env bash
# Deliberate bugs in the CUDA kernels, each built into its own copy of the
# emulated driver and put through the conformance suite (forward order, and
# the reverse and a shuffled order for what forward misses): which bugs the
# emulator catches, and how. A study for the README, not a CI step
# (a few minutes: about half a minute a run). `make cuda-emu-mutants`;
# ALL_ORDERS=1 runs every order for every bug, ONLY=regexp picks bugs.
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/cuda.test" ./gpu/cuda || exit 1

# name | file | sed expression (applied to that file's copy)
mutants=(
  "bounds check off by one (gelu_forward: i > n)|activation.cu|8s/i >= n/i > n/"
  "loop bound off by one (softmax_forward: j <= V)|softmax.cu|/^extern \"C\" __global__ void softmax_forward/,/^}/s/j < V/j <= V/"
  "block_sum: first __syncthreads removed|common.cuh|12d"
  "block_sum: loop __syncthreads removed|common.cuh|15d"
  "block_sum: last __syncthreads removed|common.cuh|18d"
  "gemm: __syncthreads after the tile loads removed|matmul.cu|42d"
  "gemm: __syncthreads after the tile's products removed|matmul.cu|50d"
  "round_bf16: truncates instead of rounding to nearest even|matmul.cu|/u += 0x7fffu/d"
  "round_bf16: ties away from zero, not to even|matmul.cu|s/u += 0x7fffu + ((u >> 16) \\& 1u);/u += 0x8000u;/"
  "gemm_bf16: a weight widened one bit short (<< 15)|matmul.cu|s/(unsigned)B\[i\] << 16/(unsigned)B[i] << 15/"
  "attention_forward: __syncthreads before the output removed|attention.cu|57d"
  "attention_forward: key row stride doubled (wrong stride)|attention.cu|15s/\\* CKV + i/* (2 * CKV) + i/"
  "attention_backward_kv: query stride C*2 (wrong stride)|attention.cu|147s/h \\* HS + i/h * 2 * HS + i/"
  "to_f16: ties away from zero, not to even|common.cuh|s/(rem == 0x1000u \\&\\& (h \\& 1u))/(rem == 0x1000u)/"
  "attention_forward_half: a value read from the key cache|attention.cu|/struct kv_half/,/^};/s/return from_f16(v\\[/return from_f16(k[/"
  "gemm: tile column index ty, not tx (wrong index)|matmul.cu|s/int c = col0 + tx \\* 4 + j/int c = col0 + ty * 4 + j/"
  "flash_attention_forward: no rescale at a new maximum|flash.cu|/for (int i = 0; i < HS; i++) o\\[i\\] \\*= c;/d"
  "flash_attention_forward: causal bound one key late|flash.cu|/flash_attention_forward(/,/^}/s/t0 + j <= pos; j++/t0 + j <= pos + 1; j++/"
  "flash_attention_forward: __syncthreads before the next tile removed|flash.cu|/the previous tile is read/d"
  "flash_attention_backward_query: causal bound one key early|flash.cu|/flash_attention_backward_query(/,/^}/s/t0 + j <= pos; j++/t0 + j < pos; j++/"
  "flash_attention_backward_kv: a query sees the key after its own|flash.cu|s/if (keys - Tq + q0 + j < t) continue;/if (keys - Tq + q0 + j < t - 1) continue;/"
)

build() { # dir -> lib
  local d=$1
  sed -n 's/^extern "C" __global__ void \([A-Za-z_0-9]*\)(.*/CORLEMU_KERNEL(\1)/p' "$d"/gpu/cuda/kernels/*.cu "$d"/gpu/cuda/emu/*.cu >"$d/kernels.inc"
  (cd "$d" && g++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -ffp-contract=off -mtls-dialect=gnu -w \
    -static-libstdc++ -static-libgcc -I. -o libcudaemu.so gpu/cuda/emu/driver.cpp gpu/cuda/emu/kernels.cpp \
    gpu/cuda/emu/cublas.cpp gpu/cuda/emu/switch_amd64.S -lpthread)
}

# verdict lib order -> "caught: <first failure>" or "missed"
verdict() {
  local out
  out=$(cd gpu/cuda && CORL_CUDA_EMU=$1 CORL_CUDA_EMU_ORDER=$2 timeout 600 "$tmp/cuda.test" \
    -test.run 'TestEmulatedConformance$' -test.count=1 2>&1)
  if [ $? -eq 0 ]; then echo "missed"; return; fi
  local why
  why=$(grep -m1 -E 'illegal|not reached|different __syncthreads|\]: = |: \[[0-9]+\] = |differs|panic:' <<<"$out" | sed 's/^ *//' | cut -c1-150)
  echo "caught: ${why:-$(grep -m1 -- '--- FAIL' <<<"$out" | sed 's/^ *//')}"
}

echo "| deliberate bug | forward order | reverse | shuffle:1 |"
echo "| --- | --- | --- | --- |"
for m in "${mutants[@]}"; do
  IFS='|' read -r name file expr <<<"$m"
  if [ -n "${ONLY:-}" ] && ! grep -qE "$ONLY" <<<"$name"; then continue; fi
  d="$tmp/m"
  rm -rf "$d" && mkdir -p "$d/gpu/cuda"
  cp -r gpu/cuda/emu gpu/cuda/kernels "$d/gpu/cuda/"
  sed -i "$expr" "$d/gpu/cuda/kernels/$file"
  if cmp -s "$d/gpu/cuda/kernels/$file" "gpu/cuda/kernels/$file"; then echo "| $name | (the edit changed nothing: fix the script) | | |"; continue; fi
  if ! build "$d" 2>"$tmp/err"; then echo "| $name | does not compile | | |"; continue; fi
  f=$(verdict "$d/libcudaemu.so" forward)
  r="-"; s="-"
  if [ "$f" = missed ] || [ -n "${ALL_ORDERS:-}" ]; then
    r=$(verdict "$d/libcudaemu.so" reverse)
    s=$(verdict "$d/libcudaemu.so" shuffle:1)
  fi
  echo "| $name | $f | $r | $s |" | sed -E 's/ at 0x[0-9a-f]+[^|]*/)/g'

done
