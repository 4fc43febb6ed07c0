package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/corl-project/corl/gpu"
	"github.com/corl-project/corl/gpu/cpu"
)

// TestCachedLogitsMatchFullForward: prefill a prefix, then decode the rest one
// token at a time, several sequences of different lengths in one batch, one
// of them inactive every other step; every position's logits must equal the
// full forward pass's. With a binary16 cache they must agree within what
// rounding the keys and values moves them (a key or value at the wrong
// position or head moves them by far more under the sharpened attention).
func TestCachedLogitsMatchFullForward(t *testing.T) {
	for name, cfg := range tinyConfigs() {
		for _, typ := range []KVType{KVFloat32, KVHalf} {
			t.Run(name+"/"+string(typ), func(t *testing.T) { testCachedLogits(t, cfg, typ) })
		}
	}
}

func testCachedLogits(t *testing.T, cfg Config, typ KVType) { testCachedLogitsOf(t, cfg, typ, nil) }

// testCachedLogitsOf is testCachedLogits on the model as prep leaves it
// (nil: as built).
func testCachedLogitsOf(t *testing.T, cfg Config, typ KVType, prep func(*Model)) {
	tol := 1e-4
	if typ == KVHalf {
		tol = halfTol
	}
	{
		{
			cfg.MaxSeq = 16
			m, err := New(cpu.New(2), cfg, 11)
			if err != nil {
				t.Fatal(err)
			}
			p := cpu.Data(m.params)
			for i := range p[:m.lo.decayed] {
				p[i] *= 10 // sharper attention, so position mistakes show
			}
			if prep != nil {
				prep(m)
			}
			r := rand.New(rand.NewPCG(2, 3))
			V := cfg.Vocab
			seqs := [][]int32{make([]int32, 13), make([]int32, 9), make([]int32, 16)}
			prefix := []int{5, 1, 8}
			full := make([][]float32, len(seqs))
			for i, s := range seqs {
				for j := range s {
					s[j] = int32(r.IntN(V))
				}
				if full[i], err = m.ForwardLogits(s, 1, len(s)); err != nil {
					t.Fatal(err)
				}
			}
			kc, err := m.NewCacheOf(len(seqs), cfg.MaxSeq, typ)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			defer func() { t.Logf("largest difference %.3g", worst) }()
			check := func(i, pos int, got []float32) {
				t.Helper()
				want := full[i][pos*V : (pos+1)*V]
				for j := range want {
					if d := math.Abs(float64(got[j] - want[j])); d > worst {
						worst = d
					}
					if math.Abs(float64(got[j]-want[j])) > tol*(1+math.Abs(float64(want[j]))) {
						t.Fatalf("sequence %d position %d logit %d: cached %v, full %v", i, pos, j, got[j], want[j])
					}
				}
			}
			for i, s := range seqs {
				lg, err := m.Prefill(kc, i, s[:prefix[i]])
				if err != nil {
					t.Fatal(err)
				}
				check(i, prefix[i]-1, lg)
			}
			for step := 0; ; step++ {
				tokens, active := make([]int32, len(seqs)), make([]bool, len(seqs))
				any := false
				for i, s := range seqs {
					if n := int(kc.Len[i]); n < len(s) {
						tokens[i], any = s[n], true
						// Sequence 1 sits out every other step: an
						// inactive slot's cache must stay as it was.
						active[i] = i != 1 || step%2 == 1
					}
				}
				if !any {
					break
				}
				lg, err := m.Decode(kc, tokens, active)
				if err != nil {
					t.Fatal(err)
				}
				for i := range seqs {
					if active[i] {
						check(i, int(kc.Len[i])-1, lg[i*V:(i+1)*V])
					}
				}
			}
		}
	}
}

// halfTol bounds a binary16 cache's logits' difference from float32's,
// relative to 1+|logit|.
const halfTol = 5e-3

func TestCacheRejectsOverflow(t *testing.T) {
	m, _ := New(cpu.New(1), tinyConfigs()["gpt2"], 1)
	if _, err := m.NewCache(2, 99); err == nil {
		t.Fatal("a cache longer than max_position_embeddings was accepted")
	}
	kc, _ := m.NewCache(1, 4)
	if _, err := m.Prefill(kc, 0, []int32{1, 2, 3, 4, 5}); err == nil {
		t.Fatal("a prompt longer than the cache was accepted")
	}
	if _, err := m.Prefill(kc, 0, []int32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Decode(kc, []int32{1}, []bool{true}); err == nil {
		t.Fatal("decoding into a full slot was accepted")
	}
}

// plainBackend hides a backend's optional speed-ups (gpu.Splitter,
// gpu.WeightFreezer, gpu.RowScatterer), so the model takes the paths every
// backend has; scaled rotary embeddings, a capability, pass through.
type plainBackend struct{ gpu.Backend }

func (p plainBackend) RoPEForwardFreq(x gpu.Buffer, pos []int32, N, H, HS int, invFreq []float32) {
	p.Backend.(gpu.ScaledRoPE).RoPEForwardFreq(x, pos, N, H, HS, invFreq)
}

func (p plainBackend) RoPEBackwardFreq(dx gpu.Buffer, pos []int32, N, H, HS int, invFreq []float32) {
	p.Backend.(gpu.ScaledRoPE).RoPEBackwardFreq(dx, pos, N, H, HS, invFreq)
}

// halfPlainBackend is plainBackend keeping the binary16 cache.
type halfPlainBackend struct{ plainBackend }

func (p halfPlainBackend) StoreHalf(dst gpu.Buffer, at []int, src gpu.Buffer, nkv, hs, tcap int) {
	p.Backend.(gpu.HalfKV).StoreHalf(dst, at, src, nkv, hs, tcap)
}

func (p halfPlainBackend) AttentionForwardHalf(out, att, q, k, v gpu.Buffer, s gpu.AttnShape) {
	p.Backend.(gpu.HalfKV).AttentionForwardHalf(out, att, q, k, v, s)
}

// TestSplitDecodingMatchesOneThread: on a backend that splits (three CPU
// threads), prompts are prefilled a third on each thread and a decoding
// step runs each third of the slots start to end on its own thread; the
// logits must be bitwise those of one thread prefilling one prompt after
// another and decoding the whole batch, with slots at different lengths
// and some inactive. The one thread also goes without the optional
// interfaces (frozen weights, new cache rows scattered in one call). Both
// cache types; a binary16 cache on a head size the vector kernels take.
func TestSplitDecodingMatchesOneThread(t *testing.T) {
	cfgs := tinyConfigs()
	cfgs["llama-paired-heads"] = Config{Family: Llama, Layers: 2, Dim: 64, Heads: 4, KVHeads: 2, Hidden: 48, Vocab: 13, MaxSeq: 8}
	cfgs["llama-hs16"] = Config{Family: Llama, Layers: 2, Dim: 64, Heads: 4, KVHeads: 4, Hidden: 48, Vocab: 13, MaxSeq: 12}
	for name, cfg := range cfgs {
		for _, typ := range []KVType{KVFloat32, KVHalf} {
			t.Run(name+"/"+string(typ), func(t *testing.T) { testSplitDecoding(t, cfg, typ) })
		}
	}
}

func testSplitDecoding(t *testing.T, cfg Config, typ KVType) { testSplitDecodingOf(t, cfg, typ, nil) }

// testSplitDecodingOf is testSplitDecoding with both models as prep leaves
// them (nil: as built).
func testSplitDecodingOf(t *testing.T, cfg Config, typ KVType, prep func(*Model)) {
	{
		{
			const B = 40
			var oneBe gpu.Backend = plainBackend{cpu.New(1)}
			if typ == KVHalf {
				oneBe = halfPlainBackend{plainBackend{cpu.New(1)}}
			}
			one, err := New(oneBe, cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			split, err := New(cpu.New(3), cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			if prep != nil {
				prep(one)
				prep(split)
			}
			if n := len(split.decodeParts(B)); n != 3 {
				t.Fatalf("%d slots on 3 threads split into %d parts, want 3", B, n)
			}
			r := rand.New(rand.NewPCG(4, 5))
			caches := make([]*Cache, 2)
			for i, m := range []*Model{one, split} {
				if caches[i], err = m.NewCacheOf(B, cfg.MaxSeq, typ); err != nil {
					t.Fatal(err)
				}
			}
			// Prompts prefilled one after another on one thread, and all
			// at once on three (a third of them each).
			slots, prompts := make([]int, B), make([][]int32, B)
			for s := range prompts {
				slots[s], prompts[s] = s, make([]int32, 1+r.IntN(cfg.MaxSeq-4))
				for j := range prompts[s] {
					prompts[s][j] = int32(r.IntN(cfg.Vocab))
				}
			}
			many, err := split.PrefillMany(caches[1], slots, prompts)
			if err != nil {
				t.Fatal(err)
			}
			for s := range prompts {
				want, err := one.Prefill(caches[0], s, prompts[s])
				if err != nil {
					t.Fatal(err)
				}
				for j := range want {
					if math.Float32bits(many[s][j]) != math.Float32bits(want[j]) {
						t.Fatalf("prefill of slot %d logit %d: split %v, one thread %v", s, j, many[s][j], want[j])
					}
				}
			}
			for step := 0; step < 3; step++ {
				tokens, active := make([]int32, B), make([]bool, B)
				for s := range tokens {
					tokens[s], active[s] = int32(r.IntN(cfg.Vocab)), r.IntN(5) != 0
				}
				want, err := one.Decode(caches[0], tokens, active)
				if err != nil {
					t.Fatal(err)
				}
				got, err := split.Decode(caches[1], tokens, active)
				if err != nil {
					t.Fatal(err)
				}
				for s := 0; s < B; s++ {
					if !active[s] {
						continue
					}
					for j := 0; j < cfg.Vocab; j++ {
						if k := s*cfg.Vocab + j; math.Float32bits(got[k]) != math.Float32bits(want[k]) {
							t.Fatalf("step %d slot %d logit %d: split %v, one thread %v", step, s, j, got[k], want[k])
						}
					}
				}
			}
		}
	}
}

// TestHalfCacheNeedsTheBackend: a binary16 cache on a backend without
// gpu.HalfKV is refused, naming the backend, as is an unknown type.
func TestHalfCacheNeedsTheBackend(t *testing.T) {
	m, _ := New(plainBackend{cpu.New(1)}, tinyConfigs()["gpt2"], 1)
	if _, err := m.NewCacheOf(2, 8, KVHalf); err == nil || !strings.Contains(err.Error(), "f16") || !strings.Contains(err.Error(), m.be.Name()) {
		t.Fatalf("f16 cache on a backend without binary16 attention: %v", err)
	}
	if _, err := m.NewCacheOf(2, 8, "bf16"); err == nil || !strings.Contains(err.Error(), "bf16") {
		t.Fatalf("an unknown cache type: %v", err)
	}
	if _, err := ParseKVType("f8"); err == nil {
		t.Fatal("ParseKVType accepted f8")
	}
}
