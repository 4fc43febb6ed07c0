package bench

import (
	"fmt"
	"github.com/corl-project/corl/cli"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/corl-project/corl/generate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/tokenizer"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/model"
)

func newBenchCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var profile string
	var stopProfile func()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure compute speed",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if profile == "" {
				return nil
			}
			f, err := os.Create(profile)
			if err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("--cpuprofile: %w", err)
			}
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if stopProfile != nil {
				stopProfile()
			}
		},
	}
	cmd.PersistentFlags().StringVar(&profile, "cpuprofile", "", "write a CPU profile of the benchmark to this file (go tool pprof)")
	cmd.AddCommand(newBenchTrainCmd(stdio, getenv), newBenchGenerateCmd(stdio, getenv), newBenchRoundCmd(stdio, getenv), newBenchGemmCmd(stdio, getenv), newBenchLlamaCppCmd(stdio, getenv))
	return cmd
}

func newBenchTrainCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		mf                cli.ModelFlags
		batch, seq, steps int
		warmup            int
		bf                cli.BackendFlags
		ref               string
		loraRank          int
		recompute         bool
		logitRows         int
		bf16              bool
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Time training steps (forward, backward, AdamW) on random tokens",
		Long: `Builds a model with random weights and times full training steps on random
tokens. Prints ms/step, tokens/s and the achieved GFLOP/s, counted as
6 * parameters * tokens (the convention of llm.c and the scaling-law papers),
and also with attention included, and that as a share of a 1024^3 matmul on
the same backend measured after every timed step (the median of the steps'
shares, each against its own peak). With --reference, the same 1024^3
matmul is also timed in that program (scripts/gemm-ref/sgemm.c, OpenBLAS's
sgemm) on as many threads after every step, and the step's share of it is
printed too: the share of the library's peak a step reaches. With
--lora-rank R the step trains LoRA adapters of rank R on every projection
with the weights frozen (the spec's members[].lora); --recompute and
--logit-rows are the spec's recompute and logit_rows; --bf16 runs the
step's matmuls in bfloat16 (the spec's update_precision: bf16: bfloat16
operands, float32 sums and masters), on a GPU's tensor cores through
cublasGemmEx.

Examples, GPT-2 124M:
  corl bench train --family gpt2 --layers 12 --dim 768 --heads 12 --vocab 50257 --batch 4 --seq 64
  make bench (the same, with OpenBLAS as --reference)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			be, err := bf.Open()
			if err != nil {
				return err
			}
			m, err := model.New(be, mf.Config(seq), 1)
			if err == nil && loraRank > 0 {
				err = m.AttachLoRA(model.LoRA{Rank: loraRank, Alpha: float64(2 * loraRank), Targets: model.LoRAModules}, 1)
			}
			if err != nil {
				return err
			}
			if batch <= 0 || seq <= 0 || steps <= 0 {
				return fmt.Errorf("--batch, --seq and --steps must be positive")
			}
			peaks, err := newPeakMeter(be, ref, bf.Threads, stdio)
			if err != nil {
				return err
			}
			defer peaks.close()
			r := rand.New(rand.NewPCG(1, 2))
			b := model.Batch{B: batch, T: seq, Inputs: make([]int32, batch*seq), Targets: make([]int32, batch*seq)}
			for i := range b.Inputs {
				b.Inputs[i], b.Targets[i] = int32(r.IntN(mf.Vocab())), int32(r.IntN(mf.Vocab()))
			}
			opt := model.DefaultOptim(1e-4)
			m.Recompute, m.LogitRows, m.BF16Matmuls = recompute, logitRows, bf16
			fmt.Fprintf(stdio.Out, "model: %s, %d layers, dim %d, %.2fM parameters; backend %s\n",
				m.Cfg.Family, m.Cfg.Layers, m.Cfg.Dim, float64(m.NumParams())/1e6, be.Name())
			if lc, ok := m.LoRAConfig(); ok {
				n := 0
				for _, t := range m.LoRATensors() {
					n += t.Size()
				}
				fmt.Fprintf(stdio.Out, "LoRA: r %d on %d projections, %d adapter values trained, the weights frozen\n", lc.Rank, len(lc.Targets), n)
			}
			var total time.Duration
			tokens := float64(batch * seq)
			for i := 0; i < warmup+steps; i++ {
				start := time.Now()
				loss, err := m.TrainStep(b, opt)
				if err != nil {
					return err
				}
				el := time.Since(start)
				fmt.Fprintf(stdio.Err, "step %d/%d: loss %.4f, %.1f ms\n", i+1, warmup+steps, loss, float64(el.Microseconds())/1e3)
				if i >= warmup {
					total += el
					if err := peaks.after(m.FLOPsPerToken(seq) * tokens / el.Seconds() / 1e9); err != nil {
						return err
					}
				}
			}
			per := total.Seconds() / float64(steps)
			w := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "ms/step\ttokens/s\tGFLOP/s (6*N*tokens)\tGFLOP/s (with attention)\tshare of peak%s\n", peaks.refHeader())
			fmt.Fprintf(w, "%.1f\t%.0f\t%.1f\t%.1f\t%.2f%s\n", per*1e3, tokens/per,
				6*float64(m.NumParams())*tokens/per/1e9, m.FLOPsPerToken(seq)*tokens/per/1e9, median(peaks.shares[0]), peaks.refCell(0))
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "peak: 1024^3 matmul after each timed step, %s; shares are the median of the steps' (with attention) against their own %s\n",
				peaks.ranges(), peaks.shareRanges(0))
			return nil
		},
	}
	mf.Register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&batch, "batch", 16, "sequences per step (B)")
	fl.IntVar(&seq, "seq", 64, "tokens per sequence (T)")
	fl.IntVar(&steps, "steps", 10, "timed steps")
	fl.IntVar(&warmup, "warmup", 2, "untimed steps first")
	fl.StringVar(&ref, "reference", "", "also take each step's share of this program's 1024^3 matmul (scripts/gemm-ref/sgemm.c)")
	fl.IntVar(&loraRank, "lora-rank", 0, "train LoRA adapters of this rank on every projection, the weights frozen (0: every weight)")
	fl.BoolVar(&recompute, "recompute", false, "recompute each layer's activations in the backward")
	fl.IntVar(&logitRows, "logit-rows", 0, "compute the logits this many tokens at a time (0: all)")
	fl.BoolVar(&bf16, "bf16", false, "the step's matmuls in bfloat16 with float32 sums and masters (the spec's update_precision: bf16)")
	bf.Register(fl, getenv)
	return cmd
}

func newBenchGenerateCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		mf                                  cli.ModelFlags
		batch, prompt, newTok, reps, warmup int
		bf                                  cli.BackendFlags
		kv                                  model.KVType
		weights                             model.WeightType
		noCache                             bool
		ref                                 string
	)
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Time batched sampling with the KV cache (or recomputing the prefix)",
		Long:  benchGenerateLong,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			be, err := bf.Open()
			if err != nil {
				return err
			}
			if reps < 1 {
				return fmt.Errorf("--reps: %d; want at least 1", reps)
			}
			m, err := model.New(be, mf.Config(prompt+newTok), 1)
			if err != nil {
				return err
			}
			reqs := make([]generate.Request, batch)
			for i, p := range benchPrompts(batch, prompt, mf.Vocab()) {
				reqs[i] = generate.Request{Prompt: p, Params: generate.Params{MaxNewTokens: newTok, Temperature: 1, Seed: uint64(i)}}
			}
			g := &generate.Generator{Model: m, Tok: tokenizer.NewBytes(), Slots: batch, KV: kv, Weights: weights}
			run := g.Run
			if noCache {
				run = g.RunWithoutCache
			}
			// Where each timed run's time went; its decoding steps are
			// rated alone as well (not without a cache, which has no
			// prefill).
			var ph *generate.Phases
			if !noCache {
				ph = &generate.Phases{}
			}
			cache := "none (recomputed)"
			if !noCache {
				cache = string(kv)
			}
			fmt.Fprintf(stdio.Out, "model: %s, %.2fM parameters; backend %s; kv cache %s; weights %s\n", m.Cfg.Family, float64(m.NumParams())/1e6, be.Name(), cache, weights)
			// Untimed runs first, as an RL round follows the last one: the
			// model keeps its cache's memory, touched once. The weights
			// are packed once, in the first run, for all of them (an RL
			// round packs them once per generation, of many sequences).
			defer m.HoldWeights(weights)()
			for r := 0; r < warmup; r++ {
				if _, err := run(reqs); err != nil {
					return err
				}
			}
			g.Phases = ph
			peaks, err := newPeakMeter(be, ref, bf.Threads, stdio)
			if err != nil {
				return err
			}
			defer peaks.close()
			return timeDecode(stdio, peaks, m, run, ph, reqs, prompt, reps)
		},
	}
	mf.Register(cmd)
	fl := cmd.Flags()
	fl.Lookup("vocab").DefValue = "257"
	fl.Set("vocab", "257")
	fl.IntVar(&batch, "batch", 64, "sequences decoded together")
	fl.IntVar(&prompt, "prompt-tokens", 128, "prompt length")
	fl.IntVar(&newTok, "new", 32, "tokens to generate per sequence")
	fl.IntVar(&reps, "reps", 2, "timed repetitions")
	fl.IntVar(&warmup, "warmup", 1, "untimed repetitions first")
	bf.Register(fl, getenv)
	fl.BoolVar(&noCache, "no-cache", false, "recompute the prefix every step instead of using the KV cache")
	fl.StringVar(&ref, "reference", "", "also take each repetition's share of this program's 1024^3 matmul (scripts/gemm-ref/sgemm.c)")
	cli.RegisterKVCache(fl, &kv)
	cli.RegisterWeights(fl, &weights)
	return cmd
}

const benchGenerateLong = `Builds a model with random weights and samples --batch completions of --new
tokens after --prompt-tokens prompts, printing generated tokens per second and
the forward FLOPs done per second (every prompt and generated position, and
the generated ones alone) against a 1024^3 matmul on the same backend,
measured after every repetition: each repetition's share is taken against its
own peak and the median is printed, with the range; with --reference, also
against that program's 1024^3 matmul (OpenBLAS's sgemm, on as many threads)
timed after every repetition. The generated tokens' FLOPs are also rated
over the decoding steps' time alone, the time spent starting requests
(prefilling the prompts) set apart. The weights are packed for the kernels
once, in the first untimed run, and kept for the rest. --kv-cache f16 keeps the
cache in IEEE binary16 (the CPU backend), half the bytes decoding reads;
--weights bf16 runs the matmuls over the weights rounded to bfloat16, half
the bytes a step of a few sequences reads.

Example, the small config at batch 64:
  corl bench generate --batch 64 --prompt-tokens 128 --new 32`

// timeDecode times reps runs of the requests, each followed by the 1024^3
// matmul peaks, and prints tokens/s and each repetition's share of its own
// peaks (the median, with the range). With ph (which run adds its phases
// to, and which holds nothing before the first timed run), the generated
// tokens' FLOPs are also rated over the decoding steps' time alone.
func timeDecode(stdio IO, peaks *peakMeter, m *model.Model, run func([]generate.Request) ([]generate.Output, error), ph *generate.Phases, reqs []generate.Request, prompt, reps int) error {
	var total time.Duration
	tokens := 0
	var flops, genFlops float64 // forward FLOPs of every position; of generated ones
	// The peaks are measured after every repetition and each
	// repetition's shares are taken against its own: this machine's
	// speed can drift by a fifth within a run, which one
	// measurement at the end would charge to the repetitions.
	for r := 0; r < reps; r++ {
		var decoded time.Duration // before this run
		if ph != nil {
			decoded = ph.Decode
		}
		start := time.Now()
		outs, err := run(reqs)
		if err != nil {
			return err
		}
		el := time.Since(start)
		total += el
		var f, gf float64
		for _, o := range outs {
			tokens += len(o.Tokens)
			all, prompt := m.ForwardFLOPs(prompt+len(o.Tokens)), m.ForwardFLOPs(prompt)
			f += all
			gf += all - prompt
		}
		flops, genFlops = flops+f, genFlops+gf
		rates := []float64{f / el.Seconds() / 1e9, gf / el.Seconds() / 1e9}
		if ph != nil {
			rates = append(rates, gf/(ph.Decode-decoded).Seconds()/1e9)
		}
		if err := peaks.after(rates...); err != nil {
			return err
		}
	}
	sec := total.Seconds()
	fmt.Fprintf(stdio.Out, "%.0f generated tokens/s (%d tokens in %.2fs)\n", float64(tokens)/sec, tokens, sec)
	fmt.Fprintf(stdio.Out, "%.1f GFLOP/s over prompts and completions (%.2f of the matmul peak); generated tokens alone %.1f GFLOP/s (%.2f)\n",
		flops/sec/1e9, median(peaks.shares[0]), genFlops/sec/1e9, median(peaks.shares[1]))
	if peaks.ref != nil {
		fmt.Fprintf(stdio.Out, "share of the reference's 1024^3 matmul: %s over prompts and completions, %s generated tokens alone\n",
			peaks.refShare(0), peaks.refShare(1))
	}
	if ph != nil {
		fmt.Fprintf(stdio.Out, "decoding steps alone (%.2fs of the %.2fs; the rest starts requests: prefill): generated tokens %.1f GFLOP/s (%.2f of the matmul peak",
			ph.Decode.Seconds(), sec, genFlops/ph.Decode.Seconds()/1e9, median(peaks.shares[2]))
		if peaks.ref != nil {
			fmt.Fprintf(stdio.Out, ", %s of the reference's", peaks.refShare(2))
		}
		fmt.Fprintln(stdio.Out, ")")
	}
	fmt.Fprintf(stdio.Out, "peak: 1024^3 matmul after each repetition, %s; shares are the median of the repetitions' against their own, generated alone %s\n",
		peaks.ranges(), peaks.shareRanges(1))
	return nil
}

// peakMeter measures the 1024^3 matmul after each timed step, on corl's
// backend and, with a reference program, in that program on as many
// threads, and keeps each step's rates as shares of the peaks measured
// right after it.
type peakMeter struct {
	be            gpu.Backend
	ref           *reference
	own, theirs   []float64   // the peaks, step by step
	shares, refSh [][]float64 // per rate: the steps' shares of own, of theirs
}

// newPeakMeter starts the reference program when path is set.
func newPeakMeter(be gpu.Backend, path string, threads int, stdio IO) (*peakMeter, error) {
	p := &peakMeter{be: be}
	if path != "" {
		r, err := startReference(path, threads, stdio.Err)
		if err != nil {
			return nil, fmt.Errorf("--reference: %w", err)
		}
		p.ref = r
	}
	return p, nil
}

// after measures the peaks and records the step's rates (GFLOP/s) as
// shares of them.
func (p *peakMeter) after(rates ...float64) error {
	own := matmulPeak(p.be)
	p.own = append(p.own, own)
	var theirs float64
	if p.ref != nil {
		var err error
		if theirs, err = p.ref.time(gemmShape{M: 1024, N: 1024, K: 1024}); err != nil {
			return fmt.Errorf("--reference: %w", err)
		}
		p.theirs = append(p.theirs, theirs)
	}
	for len(p.shares) < len(rates) {
		p.shares, p.refSh = append(p.shares, nil), append(p.refSh, nil)
	}
	for i, r := range rates {
		p.shares[i] = append(p.shares[i], r/own)
		if p.ref != nil {
			p.refSh[i] = append(p.refSh[i], r/theirs)
		}
	}
	return nil
}

func (p *peakMeter) close() {
	if p.ref != nil {
		p.ref.close()
	}
}

// refHeader is the table's reference column heading: empty without a
// reference.
func (p *peakMeter) refHeader() string {
	if p.ref == nil {
		return ""
	}
	return "\tshare of reference"
}

// refShare is the median of rate i's shares of the reference's peak.
func (p *peakMeter) refShare(i int) string {
	return fmt.Sprintf("%.2f", median(p.refSh[i]))
}

// refCell is refShare as the table's last cell: empty without a reference.
func (p *peakMeter) refCell(i int) string {
	if p.ref == nil {
		return ""
	}
	return "\t" + p.refShare(i)
}

// ranges names the peaks' spread: corl's, and the reference's.
func (p *peakMeter) ranges() string {
	s := fmt.Sprintf("%.1f-%.1f GFLOP/s", slices.Min(p.own), slices.Max(p.own))
	if p.ref != nil {
		s += fmt.Sprintf(" (reference %.1f-%.1f)", slices.Min(p.theirs), slices.Max(p.theirs))
	}
	return s
}

// shareRanges is the spread of rate i's shares.
func (p *peakMeter) shareRanges(i int) string {
	s := fmt.Sprintf("%.2f-%.2f", slices.Min(p.shares[i]), slices.Max(p.shares[i]))
	if p.ref != nil {
		s += fmt.Sprintf(", of the reference's %.2f-%.2f", slices.Min(p.refSh[i]), slices.Max(p.refSh[i]))
	}
	return "(" + s + ")"
}

// median returns the middle of xs (the mean of the middle two for an even
// count); xs is left unsorted.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
