# corl's research campaigns: the zoos of small bases, the studies' sweeps
# and their analyses (docs/research.md; each study's page is
# results/<study>/study.md). Included by the Makefile, so `make composition`
# runs from the repository root; each campaign takes hours and resumes
# where it stopped. None of them is part of `make test`.

.PHONY: paper-table zoo zoo-natural zoo-own composition-tune composition-tune-rerun composition composition-anchors collapse composition-analysis own-task-tune own-task own-task-analysis pooled-analysis redraw zoo-diversity diversity-check diversity diversity-analysis per-member per-member-analysis horizon horizon-analysis own-task-per-member own-task-per-member-analysis

# The comparison table (examples/paper-table.yaml: every reward, five
# seeds, the test split) from nothing to results/paper-table/: about four
# hours on 2 cores; stopped, it resumes where it stopped when run again.
paper-table: build
	scripts/paper-table.sh

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

# The natural zoo (results/composition/study.md): bases pretrained without
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

# The own-task zoo (results/own-task/study.md): bases
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

# The composition study (results/composition/study.md), each step resumable
# (stopped, it goes on where it stopped; cells committed in its results
# directory are not run again): the learning rates on validation, then
# every arm and the anchors on test, five seeds.
COMPOSITION = CORL_PAPER_DIR=corl-data/composition CORL_PAPER_PORT=7253
composition-tune: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/tune.yaml CORL_PAPER_OUT=results/composition-tune CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh
# The tuning sweep again from a fresh store with today's generator (its
# first run predates a generator fix; results/composition/study.md).
composition-tune-rerun: build
	CORL_PAPER_DIR=corl-data/composition-tune-rerun CORL_PAPER_PORT=7273 CORL_PAPER_SWEEP=examples/composition/tune.yaml CORL_PAPER_OUT=results/composition-tune-rerun CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh
composition: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/test.yaml CORL_PAPER_OUT=results/composition CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh
composition-anchors: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/anchors.yaml CORL_PAPER_OUT=results/composition-anchors CORL_PAPER_MEMBER=llama-odd scripts/paper-table.sh
collapse: build
	$(COMPOSITION) CORL_PAPER_SWEEP=examples/composition/collapse.yaml CORL_PAPER_OUT=results/composition-collapse CORL_PAPER_MEMBER=nat-llama scripts/paper-table.sh

# The composition study's analysis, as results/composition/study.md plans it, from the
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
	bin/corl report results/composition --member nat-llama -o "" $(COMPOSITION_CONTRASTS) --equivalence 0.02 --contrasts-md results/composition-analysis/contrasts.md >/dev/null
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
	bin/corl report results/own-task --member own-llama -o "" $(OWN_TASK_CONTRASTS) --equivalence 0.02 --contrasts-md results/own-task-analysis/contrasts.md >/dev/null
	bin/corl report results/own-task --member own-llama --where 'members=^own-llama \+ [^+]+$$' -o results/own-task-analysis/pairs.html --md results/own-task-analysis/pairs.md --json results/own-task-analysis/pairs.json

# Post hoc, after every one-way peer was seen ahead of the identical copy:
# those contrasts pooled, in each study (corl report, a contrast of several
# rows' mean) and over both, each contrast weighing the same (corl pool,
# 7 and 3 contrasts); and the planned contrasts again with the runs paired
# by seed (--paired-seeds), a sensitivity reading.
POOLED = one-way peers - identical copy
pooled-analysis: build
	bin/corl report results/composition --member nat-llama -o "" --contrast "$(POOLED), composition (post hoc)|nat-llama-init2; nat-llama-order2; nat-llama-small; members nat-llama + nat-gpt2; rephrased (peer-ring); peer-majority); nat-llama-init2 + nat-gpt2|nat-llama-copy" --contrasts-md results/composition-analysis/pooled.md --contrasts-json results/composition-analysis/pooled.json >/dev/null
	bin/corl report results/own-task --member own-llama -o "" --contrast "$(POOLED), own task (post hoc)|own-llama-init2; own-llama-small; members own-llama + own-gpt2|own-llama-copy" --contrasts-md results/own-task-analysis/pooled.md --contrasts-json results/own-task-analysis/pooled.json >/dev/null
	bin/corl report results/composition --member nat-llama -o "" --paired-seeds $(COMPOSITION_CONTRASTS) --equivalence 0.02 --contrasts-md results/composition-analysis/contrasts-paired.md >/dev/null
	bin/corl report results/own-task --member own-llama -o "" --paired-seeds $(OWN_TASK_CONTRASTS) --equivalence 0.02 --contrasts-md results/own-task-analysis/contrasts-paired.md >/dev/null
	bin/corl pool --name "$(POOLED), both studies (post hoc)" "results/composition-analysis/pooled.json:$(POOLED), composition (post hoc)@0.7" "results/own-task-analysis/pooled.json:$(POOLED), own task (post hoc)@0.3" --md results/composition-analysis/pooled-both.md >/dev/null

# Every committed study's report redrawn offline from its records with
# today's report (the HTML carries the time it was drawn).
REDRAW = composition:nat-llama composition-anchors:llama-odd own-task:own-llama paper-table:llama-odd
redraw: build
	for s in $(REDRAW); do d=results/$${s%%:*}; bin/corl report $$d --member $${s##*:} -o $$d/report.html --md $$d/report.md --json $$d/results.json --csv $$d/results.csv >/dev/null || exit 1; done

# The own-task study (results/own-task/study.md): make
# zoo-own, then the learning rates on validation, then every arm on test.
OWN_TASK = CORL_PAPER_DIR=corl-data/own-task CORL_PAPER_PORT=7263 CORL_PAPER_MEMBER=own-llama
own-task-tune: build $(OWN_ROWS)
	$(OWN_TASK) CORL_PAPER_SWEEP=examples/own-task/study/tune.yaml CORL_PAPER_OUT=results/own-task-tune scripts/paper-table.sh
own-task: build $(OWN_ROWS)
	$(OWN_TASK) CORL_PAPER_SWEEP=examples/own-task/study/test.yaml CORL_PAPER_OUT=results/own-task scripts/paper-table.sh

# The diversity 2x2 (results/diversity/plan.md). Its two new bases follow
# M's and init2's own pretraining runs (same seeds, data order and
# schedule, so the same trajectories) and stop elsewhere (--stop-at): M
# trained on to step 1250, init2 stopped at step 1200, the steps the
# plan's matching on validation chose.
zoo-diversity: build
	bin/corl pretrain $(ZOO_NAT_LLAMA) $(ZOO_NAT) --seed 11 --target-pass 0 --stop-at 1250 --out examples/zoo/nat-llama-cont
	bin/corl pretrain $(ZOO_NAT_LLAMA) $(ZOO_NAT) --seed 12 --order-seed 11 --eval-every 50 --target-pass 0 --stop-at 1200 --out examples/zoo/nat-llama-init2-early
# The plan's matching check, on the validation split only: each new base's
# sampled pass@1 against the base it must match.
DIVERSITY_EVAL := --split validation --tasks linear,mod --max-level 2 --n 250 --samples 4 --max-new-tokens 64 --threads 1
diversity-check: build
	bin/corl eval --model examples/zoo/nat-llama-cont --compare examples/zoo/nat-llama-init2 $(DIVERSITY_EVAL)
	bin/corl eval --model examples/zoo/nat-llama-init2-early --compare examples/zoo/nat-llama $(DIVERSITY_EVAL)
diversity: build
	CORL_PAPER_DIR=corl-data/diversity CORL_PAPER_PORT=7283 CORL_PAPER_MEMBER=nat-llama CORL_PAPER_SWEEP=examples/diversity/test.yaml CORL_PAPER_OUT=results/diversity scripts/paper-table.sh
DIVERSITY_PRIMARY := --contrast "diversity at matched accuracy|peer-init2-early; peer-init2|peer-copy; peer-continued"
DIVERSITY_SECONDARY := --contrast "accuracy at matched lineage|peer-continued; peer-init2|peer-copy; peer-init2-early" \
	--contrast "interaction|peer-init2; peer-copy|peer-continued; peer-init2-early"
diversity-analysis: build
	mkdir -p results/diversity-analysis
	bin/corl report results/diversity --member nat-llama -o "" $(DIVERSITY_PRIMARY) --equivalence 0.01 --contrasts-md results/diversity-analysis/primary.md >/dev/null
	bin/corl report results/diversity --member nat-llama -o "" $(DIVERSITY_SECONDARY) --contrasts-md results/diversity-analysis/secondary.md >/dev/null

# The claim per member (results/per-member/plan.md): each composition peer
# alone under self-vote; its cohort arm is results/composition's records.
per-member: build
	CORL_PAPER_DIR=corl-data/per-member CORL_PAPER_PORT=7293 CORL_PAPER_MEMBER=$(PER_MEMBER_PEERS) CORL_PAPER_SWEEP=examples/composition/per-member.yaml CORL_PAPER_OUT=results/per-member scripts/paper-table.sh
# Each run is scored on the first of these members it has: a peer's cohort
# and the peer alone; Holm over the five planned contrasts. The cohort rows
# are named by their labels' ends, as the composition records (which
# predate method names) label them.
PER_MEMBER_PEERS := nat-llama-init2,nat-llama-order2,nat-llama-small,nat-gpt2,nat-llama-reph
PER_MEMBER_CONTRASTS := --contrast "init2: cohort - alone|nat-llama + nat-llama-init2|alone-init2" \
	--contrast "order2: cohort - alone|nat-llama + nat-llama-order2|alone-order2" \
	--contrast "small: cohort - alone|nat-llama + nat-llama-small|alone-small" \
	--contrast "gpt2: cohort - alone|members nat-llama + nat-gpt2|alone-gpt2" \
	--contrast "reph: cohort - alone|rephrased (peer-ring)|alone-reph"
per-member-analysis: build
	mkdir -p results/per-member-analysis
	bin/corl report results/composition results/per-member --member $(PER_MEMBER_PEERS) -o "" --md results/per-member-analysis/table.md $(PER_MEMBER_CONTRASTS) --contrasts-md results/per-member-analysis/contrasts.md >/dev/null

# The horizon (results/horizon/plan.md): M for 100 rounds under
# self-vote, ground truth and the other-family peer trained and frozen,
# three seeds; the plan's contrasts at round 100, and at rounds 20-80 of
# the same runs (round 20 is the plan's growth reading; 40-80 the curve).
horizon: build
	CORL_PAPER_DIR=corl-data/horizon CORL_PAPER_PORT=7303 CORL_PAPER_MEMBER=nat-llama CORL_PAPER_SWEEP=examples/composition/horizon.yaml CORL_PAPER_OUT=results/horizon scripts/paper-table.sh
HORIZON_CONTRASTS := --contrast "C1 lead: trained peer - self-vote|co-rl-other-family|self-vote" \
	--contrast "C2 co-training: trained peer - frozen peer|co-rl-other-family|co-rl-frozen-other-family" \
	--contrast "C3 to the labels: trained peer - ground truth|co-rl-other-family|ground-truth"
horizon-analysis: build
	mkdir -p results/horizon-analysis
	bin/corl report results/horizon --member nat-llama -o "" $(HORIZON_CONTRASTS) --contrasts-md results/horizon-analysis/round-100.md >/dev/null
	for r in 20 40 60 80; do bin/corl report results/horizon --member nat-llama -o "" --at-round $$r --md results/horizon-analysis/round-$$r-table.md $(HORIZON_CONTRASTS) --contrasts-md results/horizon-analysis/round-$$r.md >/dev/null || exit 1; done

# The claim per member on the own task (results/own-task-per-member/plan.md):
# each own-task peer alone under self-vote; its cohort arm is
# results/own-task's records.
OWN_PEERS := own-llama-init2,own-llama-small,own-gpt2
own-task-per-member: build $(OWN_ROWS)
	CORL_PAPER_DIR=corl-data/own-task-per-member CORL_PAPER_PORT=7313 CORL_PAPER_MEMBER=$(OWN_PEERS) CORL_PAPER_SWEEP=examples/own-task/study/per-member.yaml CORL_PAPER_OUT=results/own-task-per-member scripts/paper-table.sh
OWN_PER_MEMBER_CONTRASTS := --contrast "init2: cohort - alone|own-llama + own-llama-init2|alone-init2" \
	--contrast "small: cohort - alone|own-llama + own-llama-small|alone-small" \
	--contrast "gpt2: cohort - alone|members own-llama + own-gpt2|alone-gpt2"
own-task-per-member-analysis: build
	mkdir -p results/own-task-per-member-analysis
	bin/corl report results/own-task results/own-task-per-member --member $(OWN_PEERS) -o "" --md results/own-task-per-member-analysis/table.md $(OWN_PER_MEMBER_CONTRASTS) --contrasts-md results/own-task-per-member-analysis/contrasts.md >/dev/null
