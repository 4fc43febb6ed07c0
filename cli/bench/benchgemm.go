package bench

import (
	"bufio"
	"fmt"
	"github.com/corl-project/corl/cli"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corl-project/corl/gpu"
)

// gemmShape is one product C (M x N) = A (M x K) times W^T, W stored
// N x K: MatMulForward of M activations through an N x K weight.
type gemmShape struct {
	name    string
	M, N, K int
}

// The shapes RL runs: decoding (M = live sequences) through the small
// llama's (6 x 256) and a GPT-2-124M-sized model's projections, a training
// step's forward projections at batch 4 x 64, and the square.
func gemmPresets() []gemmShape {
	var out []gemmShape
	for _, m := range []int{1, 16, 128} {
		for _, p := range []gemmShape{
			{"llama-4.95M attn", 0, 256, 256}, {"llama-4.95M mlp up", 0, 1408, 256}, {"llama-4.95M mlp down", 0, 256, 704},
			{"gpt2-124M attn", 0, 768, 768}, {"gpt2-124M mlp up", 0, 3072, 768}, {"gpt2-124M mlp down", 0, 768, 3072},
		} {
			out = append(out, gemmShape{fmt.Sprintf("decode %s", p.name), m, p.N, p.K})
		}
	}
	for _, p := range []gemmShape{{"train gpt2-124M attn", 256, 768, 768}, {"train gpt2-124M mlp up", 256, 3072, 768},
		{"train gpt2-124M mlp down", 256, 768, 3072}, {"train gpt2-124M lm head", 256, 50257, 768}} {
		out = append(out, p)
	}
	return append(out, gemmShape{"square", 1024, 1024, 1024})
}

// parseShapes reads "MxNxK,..." (or the presets, for "").
func parseShapes(s string) ([]gemmShape, error) {
	if s == "" {
		return gemmPresets(), nil
	}
	var out []gemmShape
	for _, f := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(f), "x")
		if len(parts) != 3 {
			return nil, fmt.Errorf("--shapes: %q is not MxNxK", f)
		}
		var d [3]int
		for i, p := range parts {
			v, err := strconv.Atoi(p)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("--shapes: %q: %q is not a positive integer", f, p)
			}
			d[i] = v
		}
		out = append(out, gemmShape{strings.TrimSpace(f), d[0], d[1], d[2]})
	}
	return out, nil
}

func newBenchGemmCmd(stdio IO, getenv func(string) string) *cobra.Command {
	var (
		bf     cli.BackendFlags
		shapes string
		ref    string
		rounds int
	)
	cmd := &cobra.Command{
		Use:   "gemm",
		Short: "Time the matmul on the shapes RL runs, beside a reference BLAS",
		Long: `Times MatMulForward (activations M x K times an N x K weight, transposed)
on each shape: the best of three batches of calls filling a quarter of a
second each, after one untimed call. Two corl columns: packing the weight
on every call (as a BLAS does), and with the weights frozen and packed
once (how decoding runs). With --reference, the same shapes go to that
program (scripts/gemm-ref/sgemm.c, OpenBLAS's cblas_sgemm; make bench-gemm
builds it) on the same number of threads, and corl's share of it follows.
Each shape is timed --rounds times, the reference and corl alternating,
and each column is its best round, so that a minute in which the machine
ran slow (its speed can swing by a third) counts against neither; the
last column is the range of the rounds' own shares, corl's per-call
figure over the reference's in the same round. The reference inherits the
environment: OPENBLAS_CORETYPE
picks OpenBLAS's kernel (make bench-gemm names its AVX-512 one where the
CPU has AVX-512; an OpenBLAS older than the CPU falls back to AVX2).

Examples:
  make bench-gemm
  corl bench gemm --threads 1 --shapes 16x768x768,1024x1024x1024`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if rounds < 1 {
				return fmt.Errorf("--rounds: %d, want at least 1", rounds)
			}
			be, err := bf.Open()
			if err != nil {
				return err
			}
			list, err := parseShapes(shapes)
			if err != nil {
				return err
			}
			var refer *reference
			if ref != "" {
				if refer, err = startReference(ref, bf.Threads, stdio.Err); err != nil {
					return fmt.Errorf("--reference: %w", err)
				}
				defer refer.close()
			}
			fmt.Fprintf(stdio.Out, "backend %s; GFLOP/s, the best of %d rounds of three batches\n", be.Name(), rounds)
			tw := tabwriter.NewWriter(stdio.Out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprint(tw, "shape\tM\tN\tK\tcorl\tcorl, packed once\t")
			if refer != nil {
				fmt.Fprint(tw, "reference\tcorl / reference\trounds' shares\t")
			}
			fmt.Fprintln(tw)
			for _, sh := range list {
				// Shape by shape, the reference and corl in turn within
				// the same seconds: this machine's speed drifts over a
				// minute.
				var plain, packed, gf float64
				lo, hi := math.Inf(1), math.Inf(-1)
				for range rounds {
					var g float64
					if refer != nil {
						if g, err = refer.time(sh); err != nil {
							return fmt.Errorf("--reference: %w", err)
						}
					}
					p := timeGemm(be, sh, false)
					plain, packed, gf = max(plain, p), max(packed, timeGemm(be, sh, true)), max(gf, g)
					if refer != nil {
						lo, hi = min(lo, p/g), max(hi, p/g)
					}
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t", sh.name, sh.M, sh.N, sh.K, plain, packed)
				if refer != nil {
					fmt.Fprintf(tw, "%.1f\t%.2f\t%.2f-%.2f\t", gf, plain/gf, lo, hi)
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&shapes, "shapes", "", "comma-separated MxNxK (default: decode at 1, 16 and 128 sequences, training and the 1024 square)")
	fl.StringVar(&ref, "reference", "", "a program that reads \"M N K\" lines and prints \"M N K GFLOP/s\" (scripts/gemm-ref/sgemm.c)")
	fl.IntVar(&rounds, "rounds", 3, "times each shape is timed, the reference and corl alternating; each column is its best")
	bf.Register(fl, getenv)
	return cmd
}

// timeGemm is the best GFLOP/s of three quarter-second batches of the
// shape's MatMulForward, with the weight frozen (packed once) or not.
func timeGemm(be gpu.Backend, sh gemmShape, frozen bool) float64 {
	rng := rand.New(rand.NewPCG(uint64(sh.M), uint64(sh.N*sh.K)))
	fill := func(n int) gpu.Buffer {
		host := make([]float32, n)
		for i := range host {
			host[i] = rng.Float32() - 0.5
		}
		b := be.Alloc(n)
		be.Upload(b, host)
		return b
	}
	a, w, out := fill(sh.M*sh.K), fill(sh.N*sh.K), be.Alloc(sh.M*sh.N)
	defer func() { be.Free(a); be.Free(w); be.Free(out) }()
	if f, ok := be.(gpu.WeightFreezer); ok && frozen {
		defer f.FreezeWeights(w)()
	}
	call := func() { be.MatMulForward(out, a, w, nil, sh.M, sh.K, sh.N) }
	call()
	_ = be.Sync()
	flop := 2 * float64(sh.M) * float64(sh.N) * float64(sh.K)
	best := 0.0
	for range 3 {
		calls, t0 := 0, time.Now()
		for time.Since(t0) < 250*time.Millisecond {
			call()
			calls++
		}
		_ = be.Sync()
		best = max(best, flop*float64(calls)/time.Since(t0).Seconds()/1e9)
	}
	return best
}

// reference is the reference program, running, fed one shape at a time.
type reference struct {
	path string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
}

// startReference starts the program on threads threads (0: every core).
func startReference(path string, threads int, stderr io.Writer) (*reference, error) {
	cmd := exec.Command(path)
	cmd.Stderr = stderr
	cmd.Env = os.Environ()
	if threads > 0 {
		t := strconv.Itoa(threads)
		cmd.Env = append(cmd.Env, "OPENBLAS_NUM_THREADS="+t, "OMP_NUM_THREADS="+t)
	}
	in, out, err := startPiped(cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &reference{path: path, cmd: cmd, in: in, out: bufio.NewScanner(out)}, nil
}

// startPiped starts a reference program with its stdin and stdout piped to
// the caller.
func startPiped(cmd *exec.Cmd) (io.WriteCloser, io.Reader, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	return in, out, cmd.Start()
}

// time is the program's GFLOP/s on sh.
func (r *reference) time(sh gemmShape) (float64, error) {
	if _, err := fmt.Fprintf(r.in, "%d %d %d\n", sh.M, sh.N, sh.K); err != nil {
		return 0, fmt.Errorf("%s: %w", r.path, err)
	}
	if !r.out.Scan() {
		return 0, fmt.Errorf("%s: no result for shape %dx%dx%d (%v)", r.path, sh.M, sh.N, sh.K, r.out.Err())
	}
	var m, n, k int
	var gf float64
	if _, err := fmt.Sscanf(r.out.Text(), "%d %d %d %g", &m, &n, &k, &gf); err != nil {
		return 0, fmt.Errorf("%s: output %q: want \"M N K GFLOP/s\"", r.path, r.out.Text())
	}
	if m != sh.M || n != sh.N || k != sh.K {
		return 0, fmt.Errorf("%s: answered for shape %dx%dx%d, not the one asked for (%dx%dx%d)", r.path, m, n, k, sh.M, sh.N, sh.K)
	}
	return gf, nil
}

func (r *reference) close() {
	r.in.Close()
	_ = r.cmd.Wait()
}
