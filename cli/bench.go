package cli

import (
	"fmt"
	"math/rand/v2"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
)

func newBenchCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure compute speed",
	}
	cmd.AddCommand(newBenchTrainCmd(stdio))
	return cmd
}

// modelFlags are the architecture flags shared by commands that build a model.
type modelFlags struct {
	family                              string
	layers, dim, heads, kvHeads, hidden int
	vocab, maxSeq                       int
	tied, qkvBias                       bool
}

func (f *modelFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.family, "family", "gpt2", "model family: gpt2 or llama")
	fl.IntVar(&f.layers, "layers", 4, "transformer blocks")
	fl.IntVar(&f.dim, "dim", 128, "model width (hidden_size)")
	fl.IntVar(&f.heads, "heads", 4, "attention heads")
	fl.IntVar(&f.kvHeads, "kv-heads", 0, "key/value heads for grouped-query attention (llama; 0 = heads)")
	fl.IntVar(&f.hidden, "hidden", 0, "MLP width (0 = family default)")
	fl.IntVar(&f.vocab, "vocab", 256, "vocabulary size")
	fl.IntVar(&f.maxSeq, "max-seq", 0, "maximum positions (0 = the sequence length)")
	fl.BoolVar(&f.tied, "tied", false, "tie input and output embeddings (llama; gpt2 always ties)")
	fl.BoolVar(&f.qkvBias, "qkv-bias", false, "q/k/v projection bias, as Qwen2 (llama)")
}

func (f *modelFlags) config(seq int) model.Config {
	maxSeq := f.maxSeq
	if maxSeq == 0 {
		maxSeq = seq
	}
	return model.Config{Family: f.family, Layers: f.layers, Dim: f.dim, Heads: f.heads, KVHeads: f.kvHeads,
		Hidden: f.hidden, Vocab: f.vocab, MaxSeq: maxSeq, TiedEmbed: f.tied, QKVBias: f.qkvBias}
}

func newBackend(name string, threads int) (gpu.Backend, error) {
	switch name {
	case "cpu":
		return cpu.New(threads), nil
	default:
		return nil, fmt.Errorf("--backend: %q is not available in this build (have: cpu)", name)
	}
}

func newBenchTrainCmd(stdio IO) *cobra.Command {
	var (
		mf                modelFlags
		batch, seq, steps int
		warmup, threads   int
		backend           string
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Time training steps (forward, backward, AdamW) on random tokens",
		Long: `Builds a model with random weights and times full training steps on random
tokens. Prints ms/step, tokens/s and the achieved GFLOP/s, counted as
6 * parameters * tokens (the convention of llm.c and the scaling-law papers),
and also with attention included.

Example, GPT-2 124M:
  corl bench train --family gpt2 --layers 12 --dim 768 --heads 12 --vocab 50257 --batch 4 --seq 64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			be, err := newBackend(backend, threads)
			if err != nil {
				return err
			}
			m, err := model.New(be, mf.config(seq), 1)
			if err != nil {
				return err
			}
			if batch <= 0 || seq <= 0 || steps <= 0 {
				return fmt.Errorf("--batch, --seq and --steps must be positive")
			}
			r := rand.New(rand.NewPCG(1, 2))
			b := model.Batch{B: batch, T: seq, Inputs: make([]int32, batch*seq), Targets: make([]int32, batch*seq)}
			for i := range b.Inputs {
				b.Inputs[i], b.Targets[i] = int32(r.IntN(mf.vocab)), int32(r.IntN(mf.vocab))
			}
			opt := model.DefaultOptim(1e-4)
			fmt.Fprintf(stdio.Out, "model: %s, %d layers, dim %d, %.2fM parameters; backend %s\n",
				m.Cfg.Family, m.Cfg.Layers, m.Cfg.Dim, float64(m.NumParams())/1e6, be.Name())
			var total time.Duration
			for i := 0; i < warmup+steps; i++ {
				start := time.Now()
				loss, err := m.TrainStep(b, opt)
				if err != nil {
					return err
				}
				el := time.Since(start)
				if i >= warmup {
					total += el
				}
				fmt.Fprintf(stdio.Err, "step %d/%d: loss %.4f, %.1f ms\n", i+1, warmup+steps, loss, float64(el.Microseconds())/1e3)
			}
			per := total.Seconds() / float64(steps)
			tokens := float64(batch * seq)
			w := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "ms/step\ttokens/s\tGFLOP/s (6*N*tokens)\tGFLOP/s (with attention)\n")
			fmt.Fprintf(w, "%.1f\t%.0f\t%.1f\t%.1f\n", per*1e3, tokens/per,
				6*float64(m.NumParams())*tokens/per/1e9, m.FLOPsPerToken(seq)*tokens/per/1e9)
			return w.Flush()
		},
	}
	mf.register(cmd)
	fl := cmd.Flags()
	fl.IntVar(&batch, "batch", 16, "sequences per step (B)")
	fl.IntVar(&seq, "seq", 64, "tokens per sequence (T)")
	fl.IntVar(&steps, "steps", 10, "timed steps")
	fl.IntVar(&warmup, "warmup", 2, "untimed steps first")
	fl.IntVar(&threads, "threads", 0, "CPU threads (0 = all cores)")
	fl.StringVar(&backend, "backend", "cpu", "compute backend: cpu")
	return cmd
}
