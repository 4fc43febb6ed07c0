//go:build long

package train

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corl-project/corl/blob"
	"github.com/corl-project/corl/config"
	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/gpu/cuda"
	"github.com/corl-project/corl/safetensors"
)

// TestLocalRoundsOnEmulatedCUDA runs three rounds of examples/local.yaml on
// the CUDA backend over the emulated driver (make cuda-emu) and on the CPU
// backend, and wants the same run: every rollout (tokens, rewards, votes and
// diagnostics are equal), the losses and gradient norms within the
// conformance suite's float32 tolerance, the same evaluation answers, and
// weights whose difference is float32 noise next to what training moved.
// Scaled down so the emulator (about 150 times slower than the CPU backend
// here: each GPU thread is a fiber) takes about three minutes on 2 cores:
// 8 prompts a round and an evaluation of 16 problems per task, 2 samples.
func TestLocalRoundsOnEmulatedCUDA(t *testing.T) {
	emu := cuda.Emulator(t, "..")
	gpuBe, err := cuda.Open(cuda.Options{Driver: emu})
	if err != nil {
		t.Fatal(err)
	}
	run := func(be gpu.Backend) string {
		out := t.TempDir()
		s, err := config.Load("../examples/local.yaml", func(string) string { return "" }, map[string]any{
			"rounds": 3, "prompts_per_round": 8, "eval.size": 16, "eval.samples": 2, "eval.every": 3,
			"checkpoint.every": 3, "output_dir": out,
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range s.Members {
			s.Members[i].Base = filepath.Join("..", s.Members[i].Base)
		}
		if err := Local(context.Background(), be, s, Options{}, io.Discard); err != nil {
			t.Fatalf("%s: %v", be.Name(), err)
		}
		return filepath.Join(out, s.Name)
	}
	cpuDir, gpuDir := run(cpu.New(0)), run(gpuBe)

	cpuLines, gpuLines := metricLines(t, cpuDir), metricLines(t, gpuDir)
	if len(cpuLines) != len(gpuLines) {
		t.Fatalf("metrics.jsonl: %d lines on the CPU, %d on the emulator", len(cpuLines), len(gpuLines))
	}
	rounds := 0
	for i := range cpuLines {
		c, g := cpuLines[i], gpuLines[i]
		if ev, ok := c["eval"]; ok {
			if !reflect.DeepEqual(ev, g["eval"]) {
				t.Fatalf("line %d: the evaluations differ:\ncpu  %v\ncuda %v", i, ev, g["eval"])
			}
		}
		cr, ok := c["round"].(map[string]any)
		if !ok {
			continue
		}
		rounds++
		gr := g["round"].(map[string]any)
		if !reflect.DeepEqual(cr["diagnostics"], gr["diagnostics"]) {
			t.Fatalf("round %v: the rollouts differ (diagnostics):\ncpu  %v\ncuda %v", cr["round"], cr["diagnostics"], gr["diagnostics"])
		}
		for j, cm := range cr["models"].([]any) {
			cm, gm := cm.(map[string]any), gr["models"].([]any)[j].(map[string]any)
			if cm["generated_tokens"] != gm["generated_tokens"] {
				t.Fatalf("round %v, %v: %v tokens generated on the CPU, %v on the emulator", cr["round"], cm["name"], cm["generated_tokens"], gm["generated_tokens"])
			}
			for _, k := range []string{"loss", "grad_norm"} {
				a, b := cm[k].(float64), gm[k].(float64)
				// The suite's float32 tolerance for sums of many terms.
				if math.Abs(a-b) > 1e-5+1e-4*math.Abs(a) {
					t.Fatalf("round %v, %v: %s %v on the CPU, %v on the emulator", cr["round"], cm["name"], k, a, b)
				}
			}
		}
	}
	if rounds != 3 {
		t.Fatalf("%d round lines, want 3", rounds)
	}

	for _, m := range []string{"llama-odd", "gpt2-even"} {
		base := tensors(t, filepath.Join("..", "examples", "zoo", m+"-small", "model.safetensors"))
		a := tensors(t, filepath.Join(cpuDir, "checkpoints", blob.RoundName(3), m, "model.safetensors"))
		b := tensors(t, filepath.Join(gpuDir, "checkpoints", blob.RoundName(3), m, "model.safetensors"))
		var moved, diff, movedAbs, diffAbs float64
		for name, x := range a {
			y, w0 := b[name], base[name]
			for i := range x {
				moved = max(moved, math.Abs(float64(x[i]-w0[i])))
				diff = max(diff, math.Abs(float64(x[i]-y[i])))
				movedAbs += math.Abs(float64(x[i] - w0[i]))
				diffAbs += math.Abs(float64(x[i] - y[i]))
			}
		}
		t.Logf("%s: training moved the weights by up to %.3g (sum %.3g); CPU and emulated CUDA differ by up to %.3g (sum %.3g)",
			m, moved, movedAbs, diff, diffAbs)
		// AdamW moves a weight by about the learning rate whatever its
		// gradient's size, so a near-zero gradient that float32 rounding
		// flips can move one weight as far as training did; in sum the
		// difference must be noise next to the update.
		if moved == 0 || diffAbs > 1e-3*movedAbs {
			t.Fatalf("%s: the backends' weights differ by %.3g in sum against an update of %.3g", m, diffAbs, movedAbs)
		}
	}
}

func metricLines(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["checkpoint"]; ok {
			continue // its wall-clock time
		}
		if r, ok := m["round"].(map[string]any); ok {
			delete(r, "seconds") // wall-clock times
			delete(r, "stage_seconds")
		}
		lines = append(lines, m)
	}
	return lines
}

func tensors(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, in := range f.Infos() {
		if out[in.Name], err = f.Float32(in.Name); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
