package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/corl-project/corl/gpu/cpu"
	"github.com/corl-project/corl/model"
	"github.com/corl-project/corl/safetensors"
)

// TestRealShapesAgainstLlamaCpp: checkpoints of Qwen2.5-0.5B's and
// Llama-3.2-1B's exact shapes (their published config.json and
// generation_config.json, random BF16 weights in two shards, norms and
// biases perturbed) load, save back byte for byte, and run in corl's CPU
// backend as llama.cpp runs the same weights as GGUF: next-token
// log-probabilities after four prompts within logProbTolerance and 16
// greedy tokens after each the same (or parting at a near tie).
//
// It needs llama.cpp (make llamacpp-check sets CORL_LLAMACPP_REF), about
// 15 GB of memory and 10 GB of disk, and takes about four minutes on two
// cores; without CORL_LLAMACPP_REF it is skipped.
func TestRealShapesAgainstLlamaCpp(t *testing.T) {
	ref := os.Getenv("CORL_LLAMACPP_REF")
	if ref == "" {
		t.Skip("CORL_LLAMACPP_REF is not set (make llamacpp-check sets it)")
	}
	// Garbage of gigabytes is collected before the heap doubles, so that
	// the drawn model, the loaded one and llama.cpp's fit beside each other.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(8 << 30))
	for _, tc := range []struct {
		shape  string
		params int
	}{{"qwen2.5-0.5b", 494_032_768}, {"llama-3.2-1b", 1_235_814_400}} {
		t.Run(tc.shape, func(t *testing.T) {
			files, err := model.ShapeFiles(tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := model.ParseConfig(tc.shape, files["config.json"])
			if err != nil {
				t.Fatal(err)
			}
			src, dst := t.TempDir(), t.TempDir()
			func() { // the drawn model is dropped before the loaded one is built
				m, err := model.New(cpu.New(1), cfg, 5)
				if err == nil {
					err = m.PerturbVectors(5)
				}
				if err == nil {
					err = m.SaveHFAs(src, safetensors.BF16, 2, files)
				}
				if err != nil {
					t.Fatal(err)
				}
				if m.NumParams() != tc.params {
					t.Errorf("%d parameters, the published model has %d", m.NumParams(), tc.params)
				}
			}()
			debug.FreeOSMemory()
			m, err := model.LoadHF(cpu.New(2), src)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SaveHF(dst); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(src)
			for _, e := range entries {
				if err := sameFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
					t.Fatalf("%s: saved file differs from the loaded one: %v", e.Name(), err)
				}
			}
			t.Logf("%d files, %d parameters, saved back byte for byte", len(entries), m.NumParams())
			os.RemoveAll(dst)
			o := &llamaCppBench{refPath: ref}
			eos := m.Generation.EOS[0]
			l, err := o.startOn(m, idVocab(cfg.Vocab, eos), os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.close()
			var out bytes.Buffer
			err = checkAgainstLlamaCpp(&out, l, m, idTokens{n: cfg.Vocab}, benchPrompts(4, 64, cfg.Vocab), 16)
			t.Log(out.String())
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sameFile compares two files a megabyte at a time.
func sameFile(a, b string) error {
	fa, err := os.Open(a)
	if err != nil {
		return err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for at := int64(0); ; {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return fmt.Errorf("they differ in the megabyte at byte %d", at)
		}
		if ea != nil || eb != nil {
			if ea == io.EOF || ea == io.ErrUnexpectedEOF {
				return nil
			}
			return errors.Join(ea, eb)
		}
		at += int64(na)
	}
}
