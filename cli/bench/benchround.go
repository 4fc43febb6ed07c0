package bench

import (
	"context"
	"fmt"
	"github.com/corl-project/corl/cli"
	"io"
	"math/rand/v2"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/cohort"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/evaluate"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/record"
	"github.com/corl-project/corl/rl"
)

// newBenchRoundCmd times the stages of a spec's rounds in this process.
func newBenchRoundCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		sf     cli.SpecFlags
		rounds int
		bf     cli.BackendFlags
	)
	cmd := &cobra.Command{
		Use:   "round -f run.yaml",
		Short: "Time each stage of a spec's RL rounds and compare with the backend's matmul peak",
		Long: `Loads the spec's members and data, runs --rounds rounds in this process (as
corl train --local does, writing nothing), then one evaluation and one
checkpoint, and prints where the time went: seconds per round for each
stage, its share of the round, and for generation and update the model
GFLOP/s and their share of the peak, the GFLOP/s of a 1024^3 matmul measured
on the same backend in the same run. On the CPU it also prints the FLOPs of
the projections' matmuls the rounds ran and the time they alone would take
at that peak: a floor under the round that no overhead saved can pass.

Example:
  corl bench round -f examples/local.yaml --rounds 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rounds < 1 {
				return fmt.Errorf("--rounds: must be at least 1, got %d", rounds)
			}
			s, err := sf.Load(getenv)
			if err != nil {
				return err
			}
			be, err := bf.Open()
			if err != nil {
				return err
			}
			peak := matmulPeak(be)
			data, err := cohort.LoadData(s)
			if err != nil {
				return err
			}
			members := make([]*rl.Member, len(s.Members))
			for i, ms := range s.Members {
				if members[i], err = cohort.LoadMember(be, ms, ms.Base, s.GRPO.Beta > 0); err != nil {
					return err
				}
			}
			mm0 := matmulWork(be)
			sum, genF, updF, wall, err := timeRounds(cmd.Context(), stdio.Err, members, data, s, rounds)
			if err != nil {
				return err
			}
			mm := matmulWork(be) - mm0
			fmt.Fprintf(stdio.Err, "\r%-60s\r", "")
			if len(data.Eval) > 0 {
				t0 := time.Now()
				if _, err := cohort.Evaluate(members, data, rounds, evaluate.OptionsFromSpec(s)); err != nil {
					return err
				}
				sum.Evaluate = time.Since(t0).Seconds()
			}
			dir, err := os.MkdirTemp("", "corl-bench-round")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			t0 := time.Now()
			for _, m := range members {
				if err := cohort.SaveMember(m, dir+"/"+m.Name); err != nil {
					return err
				}
			}
			sum.Checkpoint = time.Since(t0).Seconds()
			fmt.Fprintf(stdio.Out, "spec %s: %d members, %d prompts x %d samples, backend %s\n", s.Name, len(members),
				s.PromptsPerRound, s.Generation.NumGenerations, be.Name())
			if err := printStages(stdio.Out, sum, rounds, wall, genF, updF, peak); err != nil {
				return err
			}
			if mm > 0 {
				n := float64(rounds)
				fmt.Fprintf(stdio.Out, "\nmatmuls run (projections, forward and backward): %.1f GFLOP a round; at the peak they alone take %.2f s, %.0f%% of the round\n",
					mm/n/1e9, mm/n/1e9/peak, 100*mm/1e9/peak/wall)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	sf.Register(fl)
	fl.IntVar(&rounds, "rounds", 3, "rounds to time")
	bf.Register(fl, getenv)
	cmd.MarkFlagRequired("file")
	return cmd
}

// timeRounds runs rounds RL rounds of s's members in this process and
// sums their stages' seconds, generation and update FLOPs, and wall time.
func timeRounds(ctx context.Context, progress io.Writer, members []*rl.Member, data *cohort.Data, s *config.RunSpec, rounds int) (
	sum record.Stages, genF, updF, wall float64, err error) {
	c := rl.ConfigFromSpec(s)
	for r := 0; r < rounds; r++ {
		if err := ctx.Err(); err != nil {
			return sum, genF, updF, wall, err
		}
		prompts := cohort.PromptsForRound(data.RL, s.Seed, r, s.PromptsPerRound)
		met, err := rl.Round(members, prompts, c, r, r*s.GRPO.StepsPerRound(), func(stage string) {
			fmt.Fprintf(progress, "\rround %d/%d: %-40s", r+1, rounds, stage)
		})
		if err != nil {
			return sum, genF, updF, wall, err
		}
		sum.Generate += met.Stages.Generate
		sum.Recompute += met.Stages.Recompute
		sum.Intrinsic += met.Stages.Intrinsic
		sum.Grade += met.Stages.Grade
		sum.Update += met.Stages.Update
		wall += met.Seconds
		for _, m := range met.Models {
			genF += m.GenFLOPs
			updF += m.UpdateFLOPs
		}
	}
	return sum, genF, updF, wall, nil
}

// printStages is corl bench round's table: each stage's seconds per round
// (of rounds timed, wall seconds in all), its share, and for generation
// and update the GFLOP/s and their share of the matmul peak.
func printStages(out io.Writer, sum record.Stages, rounds int, wall, genF, updF, peak float64) error {
	n := float64(rounds)
	fmt.Fprintf(out, "matmul peak (1024^3 on this backend): %.1f GFLOP/s\n\n", peak)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "stage\ts/round\tshare of round\tGFLOP/s\tshare of peak\t")
	row := func(name string, secs, flops float64) {
		rate, share := "-", "-"
		if flops > 0 && secs > 0 {
			g := flops / secs / 1e9
			rate, share = fmt.Sprintf("%.1f", g), fmt.Sprintf("%.2f", g/peak)
		}
		fmt.Fprintf(w, "%s\t%.2f\t%.0f%%\t%s\t%s\t\n", name, secs/n, 100*secs/wall, rate, share)
	}
	row("generate", sum.Generate, genF)
	row("logprob recompute", sum.Recompute, 0)
	row("intrinsic scoring", sum.Intrinsic, 0)
	row("grade", sum.Grade, 0)
	row("update", sum.Update, updF)
	fmt.Fprintf(w, "round\t%.2f\t100%%\t%.1f\t%.2f\t\n", wall/n, (genF+updF)/wall/1e9, (genF+updF)/wall/1e9/peak)
	fmt.Fprintf(w, "evaluate (once)\t%.2f\t\t\t\t\n", sum.Evaluate)
	fmt.Fprintf(w, "checkpoint (once)\t%.2f\t\t\t\t\n", sum.Checkpoint)
	return w.Flush()
}

// matmulWork is the FLOPs of the matmuls be has run, where it counts them
// (the CPU backend), else 0.
func matmulWork(be gpu.Backend) float64 {
	if c, ok := be.(interface{ MatMulFLOPs() float64 }); ok {
		return c.MatMulFLOPs()
	}
	return 0
}

// matmulPeak is the GFLOP/s of a 1024^3 matmul on be (best of three).
func matmulPeak(be gpu.Backend) float64 {
	const n = 1024
	rng := rand.New(rand.NewPCG(1, 2))
	host := make([]float32, n*n)
	for i := range host {
		host[i] = rng.Float32()
	}
	a, w, out := be.Alloc(n*n), be.Alloc(n*n), be.Alloc(n*n)
	defer func() { be.Free(a); be.Free(w); be.Free(out) }()
	be.Upload(a, host)
	be.Upload(w, host)
	best := 0.0
	for range 3 {
		t0 := time.Now()
		be.MatMulForward(out, a, w, nil, n, n, n)
		if be.Sync() != nil {
			return 0
		}
		best = max(best, 2*n*n*n/time.Since(t0).Seconds()/1e9)
	}
	return best
}
