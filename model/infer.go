package model

import (
	"fmt"
	"sync"

	"github.com/corl-project/corl/gpu"
)

// Cache is a key/value cache for incremental decoding: Slots sequences of up
// to Cap positions each, every slot at its own length, so prompts of different
// lengths decode together and a finished slot can take a new sequence.
type Cache struct {
	Slots, Cap int
	Len        []int32 // positions held per slot

	Type    KVType     // how keys and values are stored
	Weights WeightType // what the matmuls read the weights as

	k, v []gpu.Buffer // per layer (Slots, Cap, NKV*HS); binary16 (Slots, NKV, Cap, HS) for KVHalf
	// scratch for up to maxN tokens at once
	maxN                                 int
	x, x2, ln, mean, rstd, q, kn, vn     gpu.Buffer
	att, attOut, fc, act, tmp, lnf, logs gpu.Buffer

	parts int // prefills that can run at once, each in its own scratch rows
	// loraU, loraY are the adapters' scratch rows (LoRA: (maxN, r) and
	// (maxN, widest projection)), for a model with adapters; loraRank is r.
	loraU, loraY gpu.Buffer
	loraRank     int

	release func() // ends the weights' freeze (gpu.WeightFreezer)
}

// KVType is how a Cache stores keys and values.
type KVType string

const (
	// KVFloat32 keeps them as computed: decoding has the bits of the
	// training forward's keys and values.
	KVFloat32 KVType = "f32"
	// KVHalf rounds them to IEEE binary16 when stored: half the bytes,
	// which decoding attention is bound by, for a rounding of each key and
	// value (a relative error up to 2^-11; magnitudes past 65504 become
	// infinite). Attention computes as over float32 keys and values equal
	// to the stored ones, so results still do not depend on threads or on
	// the batch. Backends with gpu.HalfKV only (the CPU's and CUDA's).
	KVHalf KVType = "f16"
)

// WeightType is what a Cache's decoding reads the weights as.
type WeightType string

const (
	// WeightFloat32 reads them as trained: decoding has the training
	// forward's bits.
	WeightFloat32 WeightType = "f32"
	// WeightBF16 computes every matmul over its weight rounded to
	// bfloat16 (a relative error up to 2^-9 in each weight), activations
	// and sums in float32: decoding a few sequences reads the weights once
	// a token, and this halves the bytes. Embedding lookups and norms keep
	// float32; results still do not depend on threads or on the batch.
	// Backends with gpu.BF16Freezer only (the CPU's and CUDA's).
	WeightBF16 WeightType = "bf16"
	// WeightBF16Compute is WeightBF16 with each matmul's input rounded to
	// bfloat16 as well, sums still float32 (gpu.BF16Compute): what tensor
	// cores compute, for batched decoding and prefill that arithmetic,
	// not memory, bounds. Each activation entering a matmul moves by up
	// to 2^-9 of itself too.
	WeightBF16Compute WeightType = "bf16-act"
)

// ParseWeightType reads a WeightType's name; "" is WeightFloat32.
func ParseWeightType(s string) (WeightType, error) {
	switch WeightType(s) {
	case "", WeightFloat32:
		return WeightFloat32, nil
	case WeightBF16:
		return WeightBF16, nil
	case WeightBF16Compute:
		return WeightBF16Compute, nil
	}
	return "", fmt.Errorf("weight type %q: want f32, bf16 or bf16-act", s)
}

// ErrCacheType is wrapped by NewCacheOf when the backend or the model
// cannot hold the cache type asked for: the same request fails the same
// way on this backend every time.
var ErrCacheType = fmt.Errorf("kv cache f16")

// ErrWeightType is ErrCacheType for weights bf16.
var ErrWeightType = fmt.Errorf("weights bf16")

// ParseKVType reads a KVType's name; "" is KVFloat32.
func ParseKVType(s string) (KVType, error) {
	switch KVType(s) {
	case "", KVFloat32:
		return KVFloat32, nil
	case KVHalf:
		return KVHalf, nil
	}
	return "", fmt.Errorf("kv cache type %q: want f32 or f16", s)
}

// NewCache allocates a float32 cache of slots x capacity positions
// (capacity at most max_position_embeddings).
func (m *Model) NewCache(slots, capacity int) (*Cache, error) {
	return m.NewCacheOf(slots, capacity, KVFloat32)
}

// NewCacheOf is NewCache storing keys and values as typ says.
func (m *Model) NewCacheOf(slots, capacity int, typ KVType) (*Cache, error) {
	return m.NewCacheWith(slots, capacity, typ, WeightFloat32)
}

// NewCacheWith is NewCacheOf decoding over the weights as w says.
func (m *Model) NewCacheWith(slots, capacity int, typ KVType, w WeightType) (*Cache, error) {
	c := m.Cfg
	switch w {
	case WeightFloat32:
	case WeightBF16:
		if _, ok := m.be.(gpu.BF16Freezer); !ok {
			return nil, fmt.Errorf("%w: backend %s has no bfloat16 weights; use f32", ErrWeightType, m.be.Name())
		}
	case WeightBF16Compute:
		if _, ok := m.be.(gpu.BF16Compute); !ok {
			return nil, fmt.Errorf("%w: backend %s has no bfloat16 matmuls; use f32", ErrWeightType, m.be.Name())
		}
	default:
		return nil, fmt.Errorf("weight type %q: want f32, bf16 or bf16-act", w)
	}
	if slots <= 0 || capacity <= 0 || capacity > c.MaxSeq {
		return nil, fmt.Errorf("kv cache: %d slots x %d positions; want positive, at most %d positions", slots, capacity, c.MaxSeq)
	}
	half := false
	switch typ {
	case KVFloat32:
	case KVHalf:
		if _, ok := m.be.(gpu.HalfKV); !ok {
			return nil, fmt.Errorf("%w: backend %s has no binary16 attention; use f32", ErrCacheType, m.be.Name())
		}
		if c.HeadSize()%2 != 0 {
			return nil, fmt.Errorf("%w: head size %d is odd; want even", ErrCacheType, c.HeadSize())
		}
		half = true
	default:
		return nil, fmt.Errorf("kv cache type %q: want f32 or f16", typ)
	}
	if sp := m.spare; sp != nil {
		m.spare = nil
		if sp.Slots == slots && sp.Cap == capacity && sp.Type == typ && sp.Weights == w && sp.loraRank == m.loraRank() {
			// The last cache freed, reused: its pages are already mapped, and
			// stale rows past Len are never read.
			clear(sp.Len)
			m.freeze(sp)
			return sp, nil
		}
		m.freeBuffers(sp)
	}
	be := m.be
	C, KVD, QD := c.Dim, c.KVHeads*c.HeadSize(), c.Heads*c.HeadSize()
	fcW := c.Hidden
	if c.Family == Llama {
		fcW = 2 * c.Hidden
	}
	// Scratch rows for a decoding step of every slot, or for one prefill
	// per thread at once (each in its own rows).
	parts := 1
	if _, ok := be.(gpu.Splitter); ok {
		parts = max(1, be.Threads())
	}
	n := max(slots, capacity*parts)
	kc := &Cache{Slots: slots, Cap: capacity, Len: make([]int32, slots), Type: typ, Weights: w, maxN: n, parts: parts,
		k: make([]gpu.Buffer, c.Layers), v: make([]gpu.Buffer, c.Layers)}
	perLayer, newRows := slots*capacity*KVD, slots
	if half {
		// Two binary16 values an element; a prefill projects into scratch
		// rows too, then stores them rounded.
		perLayer, newRows = perLayer/2, n
	}
	for l := range kc.k {
		kc.k[l], kc.v[l] = be.Alloc(perLayer), be.Alloc(perLayer)
	}
	kc.x, kc.x2, kc.ln, kc.tmp, kc.lnf = be.Alloc(n*C), be.Alloc(n*C), be.Alloc(n*C), be.Alloc(n*C), be.Alloc(n*C)
	kc.mean, kc.rstd = be.Alloc(n), be.Alloc(n)
	kc.q, kc.attOut = be.Alloc(n*QD), be.Alloc(n*QD)
	kc.kn, kc.vn = be.Alloc(newRows*KVD), be.Alloc(newRows*KVD) // decoding's new rows; a float32 prefill projects into the cache
	kc.att = be.Alloc(c.Heads * max(capacity*capacity*parts, slots*capacity))
	kc.fc, kc.act = be.Alloc(n*fcW), be.Alloc(n*c.Hidden)
	kc.logs = be.Alloc(max(slots, parts) * c.Vocab)
	if r := m.loraRank(); r > 0 {
		kc.loraRank, kc.loraU, kc.loraY = r, be.Alloc(n*r), be.Alloc(n*c.loraWidest())
	}
	m.freeze(kc)
	return kc, nil
}

// freeze promises the backend that the weights stay unwritten while kc is
// in use: nothing trains a model while it generates.
func (m *Model) freeze(kc *Cache) { kc.release = m.HoldWeights(kc.Weights) }

// HoldWeights promises the backend that the weights stay unwritten until
// release is called, as decoding them as w reads them. On the CPU backend
// every generation inside the hold shares one packing of the weights
// (gpu/cpu's nested freezes) where each would pack its own: a benchmark
// times decoding as another engine does, its model loaded once.
func (m *Model) HoldWeights(w WeightType) (release func()) {
	if f, ok := m.be.(gpu.BF16Compute); ok && w == WeightBF16Compute {
		return f.FreezeWeightsBF16Compute(m.params)
	}
	if f, ok := m.be.(gpu.BF16Freezer); ok && w == WeightBF16 {
		return f.FreezeWeightsBF16(m.params)
	}
	if f, ok := m.be.(gpu.WeightFreezer); ok {
		return f.FreezeWeights(m.params)
	}
	return func() {}
}

// FreeCache ends kc's use. The model keeps it for the next NewCache of the
// same shape (a round's generation and the next one), releasing the one it
// kept before.
func (m *Model) FreeCache(kc *Cache) {
	kc.release()
	kc.release = func() {}
	if m.spare != nil && m.spare != kc {
		m.freeBuffers(m.spare)
	}
	m.spare = kc
}

// freeBuffers returns kc's device memory.
func (m *Model) freeBuffers(kc *Cache) {
	for _, b := range append(append([]gpu.Buffer{kc.x, kc.x2, kc.ln, kc.mean, kc.rstd, kc.q, kc.kn, kc.vn,
		kc.att, kc.attOut, kc.fc, kc.act, kc.tmp, kc.lnf, kc.logs}, kc.k...), kc.v...) {
		m.be.Free(b)
	}
	if kc.loraU != nil {
		m.be.Free(kc.loraU)
		m.be.Free(kc.loraY)
	}
}

// Prefill replaces slot's contents with tokens and returns the logits (V) of
// the next token after them.
func (m *Model) Prefill(kc *Cache, slot int, tokens []int32) ([]float32, error) {
	out, err := m.PrefillMany(kc, []int{slot}, [][]int32{tokens})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// PrefillMany is Prefill of prompts[i] into slots[i] for every i (distinct
// slots). On a backend that splits (gpu.Splitter) the prompts are shared
// out among the threads, each prefilling its own start to end in its own
// scratch rows; the logits are bitwise those of one Prefill after another.
func (m *Model) PrefillMany(kc *Cache, slots []int, prompts [][]int32) ([][]float32, error) {
	if len(slots) != len(prompts) {
		return nil, fmt.Errorf("prefill: %d slots for %d prompts", len(slots), len(prompts))
	}
	for i, slot := range slots {
		n := len(prompts[i])
		if slot < 0 || slot >= kc.Slots {
			return nil, &PromptError{i, fmt.Errorf("prefill: slot %d outside [0, %d)", slot, kc.Slots)}
		}
		if n == 0 || n > kc.Cap {
			return nil, &PromptError{i, fmt.Errorf("prefill: %d tokens; want 1..%d (the cache's capacity)", n, kc.Cap)}
		}
		if err := m.checkTokens("prompt", prompts[i], n); err != nil {
			return nil, &PromptError{i, err}
		}
	}
	out := make([][]float32, len(prompts))
	parts := []gpu.Backend{m.be}
	if sp, ok := m.be.(gpu.Splitter); ok && kc.parts > 1 && len(prompts) > 1 {
		parts = sp.Split(min(kc.parts, len(prompts)))
	}
	onParts(parts, func(p int, be gpu.Backend) {
		for i := p * len(prompts) / len(parts); i < (p+1)*len(prompts)/len(parts); i++ {
			out[i] = m.prefillOn(be, kc, p, slots[i], prompts[i])
		}
	})
	for i, slot := range slots {
		kc.Len[slot] = int32(len(prompts[i]))
	}
	if err := m.be.Sync(); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	return out, nil
}

// PromptError is PrefillMany's refusal of prompts[Index].
type PromptError struct {
	Index int
	Err   error
}

func (e *PromptError) Error() string { return e.Err.Error() }
func (e *PromptError) Unwrap() error { return e.Err }

// prefillOn prefills slot with tokens on be, in scratch part p (its rows
// from p*Cap, its attention probabilities and logits row), and returns the
// next token's logits.
func (m *Model) prefillOn(be gpu.Backend, kc *Cache, p, slot int, tokens []int32) []float32 {
	n := len(tokens)
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	HS := m.Cfg.HeadSize()
	KVD := m.Cfg.KVHeads * HS
	off, first := slot*kc.Cap*KVD, p*kc.Cap
	shape := gpu.AttnShape{B: 1, Tq: n, Tk: n, Tcap: kc.Cap, NH: m.Cfg.Heads, NKV: m.Cfg.KVHeads, HS: HS}
	newKV := func(l int) (gpu.Buffer, gpu.Buffer) {
		// The prompt's keys and values lie together in the slot's cache
		// rows: projected straight there, with nothing to copy.
		return kc.k[l].Slice(off, n*KVD), kc.v[l].Slice(off, n*KVD)
	}
	store := func(l int) (gpu.Buffer, gpu.Buffer, bool) {
		return kc.k[l].Slice(off, kc.Cap*KVD), kc.v[l].Slice(off, kc.Cap*KVD), false
	}
	if kc.Type == KVHalf {
		// Projected into this part's scratch rows, stored rounded, and
		// attended over in float32 there: the values the cache holds.
		kn, vn := kc.kn.Slice(first*KVD, n*KVD), kc.vn.Slice(first*KVD, n*KVD)
		at := make([]int, n)
		for i := range at {
			at[i] = off + i*HS
		}
		hk := be.(gpu.HalfKV)
		newKV = func(int) (gpu.Buffer, gpu.Buffer) { return kn, vn }
		store = func(l int) (gpu.Buffer, gpu.Buffer, bool) {
			hk.StoreHalf(kc.k[l], at, kn, m.Cfg.KVHeads, HS, kc.Cap)
			hk.StoreHalf(kc.v[l], at, vn, m.Cfg.KVHeads, HS, kc.Cap)
			return kn, vn, false
		}
	}
	m.inferLayers(be, kc, first, p*m.Cfg.Heads*kc.Cap*kc.Cap, tokens, pos, shape, newKV, store)
	V := m.Cfg.Vocab
	m.inferHead(be, kc, first+n-1, p, 1)
	logits := make([]float32, V)
	be.Download(logits, kc.logs.Slice(p*V, V))
	return logits
}

// CopyPrefix makes slot dst hold the first n positions of slot src (a prompt
// shared by several samples is prefilled once).
func (m *Model) CopyPrefix(kc *Cache, src, dst, n int) error {
	if src < 0 || src >= kc.Slots || dst < 0 || dst >= kc.Slots || n <= 0 || n > int(kc.Len[src]) {
		return fmt.Errorf("copy prefix: %d positions from slot %d (holding %d) to slot %d", n, src, kc.Len[src], dst)
	}
	if src != dst {
		HS := m.Cfg.HeadSize()
		KVD := m.Cfg.KVHeads * HS
		for l := range kc.k {
			if kc.Type == KVHalf {
				// Each head's first n rows, two values an element.
				for h := 0; h < m.Cfg.KVHeads; h++ {
					from, to, w := (src*kc.Cap*KVD+h*kc.Cap*HS)/2, (dst*kc.Cap*KVD+h*kc.Cap*HS)/2, n*HS/2
					m.be.Copy(kc.k[l].Slice(to, w), kc.k[l].Slice(from, w))
					m.be.Copy(kc.v[l].Slice(to, w), kc.v[l].Slice(from, w))
				}
				continue
			}
			m.be.Copy(kc.k[l].Slice(dst*kc.Cap*KVD, n*KVD), kc.k[l].Slice(src*kc.Cap*KVD, n*KVD))
			m.be.Copy(kc.v[l].Slice(dst*kc.Cap*KVD, n*KVD), kc.v[l].Slice(src*kc.Cap*KVD, n*KVD))
		}
	}
	kc.Len[dst] = int32(n)
	return nil
}

// Decode appends tokens[s] to every active slot s and returns the next-token
// logits (Slots, V). Inactive slots (active[s] false) are computed at position
// 0 and left unchanged; their logits are meaningless.
func (m *Model) Decode(kc *Cache, tokens []int32, active []bool) ([]float32, error) {
	B := kc.Slots
	if len(tokens) != B || len(active) != B {
		return nil, fmt.Errorf("decode: %d tokens and %d active flags for %d slots", len(tokens), len(active), B)
	}
	if err := m.checkTokens("tokens", tokens, B); err != nil {
		return nil, err
	}
	pos, klen := make([]int32, B), make([]int32, B)
	tk := 1
	for s := range pos {
		if active[s] {
			if kc.Len[s] == 0 || int(kc.Len[s]) >= kc.Cap {
				return nil, fmt.Errorf("decode: slot %d holds %d of %d positions; prefill it first or free room", s, kc.Len[s], kc.Cap)
			}
			pos[s] = kc.Len[s]
		}
		klen[s] = pos[s] + 1
		tk = max(tk, int(klen[s]))
	}
	HS := m.Cfg.HeadSize()
	KVD := m.Cfg.KVHeads * HS
	// decode runs slots [s0, s1) start to end on be.
	decode := func(be gpu.Backend, s0, s1 int) {
		shape := gpu.AttnShape{B: s1 - s0, Tq: 1, Tk: tk, Tcap: kc.Cap, NH: m.Cfg.Heads, NKV: m.Cfg.KVHeads, HS: m.Cfg.HeadSize(), KLen: klen[s0:s1]}
		slab := kc.Cap * KVD // one slot's cache rows
		kn, vn := kc.kn.Slice(s0*KVD, (s1-s0)*KVD), kc.vn.Slice(s0*KVD, (s1-s0)*KVD)
		scratch := func(int) (gpu.Buffer, gpu.Buffer) { return kn, vn }
		// Where each slot's new row goes in a layer's cache; an inactive
		// slot's goes nowhere, so its cache stays as it was. A binary16
		// cache is head-major: slot s's head h at position t is value
		// s*slab + h*Cap*HS + t*HS, so a position is HS values on.
		step := KVD
		if kc.Type == KVHalf {
			step = HS
		}
		at := make([]int, s1-s0)
		for s := s0; s < s1; s++ {
			at[s-s0] = -1
			if active[s] {
				at[s-s0] = s*slab + int(pos[s])*step
			}
		}
		m.inferLayers(be, kc, s0, s0*m.Cfg.Heads*tk, tokens[s0:s1], pos[s0:s1], shape, scratch, func(l int) (gpu.Buffer, gpu.Buffer, bool) {
			if kc.Type == KVHalf {
				hk := be.(gpu.HalfKV)
				hk.StoreHalf(kc.k[l], at, kn, m.Cfg.KVHeads, HS, kc.Cap)
				hk.StoreHalf(kc.v[l], at, vn, m.Cfg.KVHeads, HS, kc.Cap)
				return kc.k[l].Slice(s0*slab/2, (s1-s0)*slab/2), kc.v[l].Slice(s0*slab/2, (s1-s0)*slab/2), true
			}
			if sc, ok := be.(gpu.RowScatterer); ok {
				sc.ScatterRows(kc.k[l], at, kn, KVD)
				sc.ScatterRows(kc.v[l], at, vn, KVD)
			} else {
				for i, o := range at {
					if o >= 0 {
						be.Copy(kc.k[l].Slice(o, KVD), kn.Slice(i*KVD, KVD))
						be.Copy(kc.v[l].Slice(o, KVD), vn.Slice(i*KVD, KVD))
					}
				}
			}
			return kc.k[l].Slice(s0*slab, (s1-s0)*slab), kc.v[l].Slice(s0*slab, (s1-s0)*slab), false
		})
		m.inferHead(be, kc, s0, s0, s1-s0)
	}
	// Each thread decodes its own slots through every layer: one
	// synchronisation a step instead of one per operation.
	parts := m.decodeParts(B)
	onParts(parts, func(p int, be gpu.Backend) { decode(be, p*B/len(parts), (p+1)*B/len(parts)) })
	for s := range active {
		if active[s] {
			kc.Len[s]++
		}
	}
	return m.downloadLogits(kc, B)
}

// decodeParts are the backends a decoding step of B slots is split over:
// one one-thread part per thread when the backend splits (gpu.Splitter)
// and every part gets at least minPartSlots slots, else the model's
// backend alone.
func (m *Model) decodeParts(B int) []gpu.Backend {
	sp, ok := m.be.(gpu.Splitter)
	if n := min(m.be.Threads(), B/minPartSlots); ok && n >= 2 {
		return sp.Split(n)
	}
	return []gpu.Backend{m.be}
}

// onParts runs fn(p, parts[p]) for every part (a decoding or prefill
// backend, an Accumulate pass), concurrently when there are several, and
// returns when all are done.
func onParts[P any](parts []P, fn func(p int, part P)) {
	if len(parts) == 1 {
		fn(0, parts[0])
		return
	}
	var wg sync.WaitGroup
	for p, be := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p, be)
		}()
	}
	wg.Wait()
}

// minPartSlots is the fewest slots a split decoding part takes: fewer rows
// than the GEMM's 12-row micro-tile leave the kernel idle.
const minPartSlots = 12

// inferLayers runs the blocks over N = len(ids) tokens on be without saving
// activations, in rows [first, first+N) of kc's scratch (a decoding part's
// slots, a prefill part's rows) and its attention probabilities from
// attOff. Layer l's new keys/values are projected into the N rows newKV
// gives (the cache itself when they lie together there, else scratch);
// store then moves them into the cache if need be and returns the cache
// views attention reads, with half set when they are a binary16 cache
// (gpu.HalfKV).
func (m *Model) inferLayers(be gpu.Backend, kc *Cache, first, attOff int, ids, pos []int32, shape gpu.AttnShape,
	newKV func(l int) (kn, vn gpu.Buffer), store func(l int) (k, v gpu.Buffer, half bool)) {
	c, lo := m.Cfg, m.lo
	N := len(ids)
	C, HS, H := c.Dim, c.HeadSize(), c.Hidden
	QD, KVD := c.Heads*HS, c.KVHeads*HS
	P := func(i int) gpu.Buffer { return m.view(m.params, i) }
	// sl is this call's n rows of width w in a scratch buffer.
	sl := func(b gpu.Buffer, w, n int) gpu.Buffer { return b.Slice(first*w, n*w) }
	x, x2 := sl(kc.x, C, N), sl(kc.x2, C, N)
	// adapt adds layer l's adapter of mod (if any) to y, projected from in.
	adapt := func(y, in gpu.Buffer, l int, mod loraModule) {
		if kc.loraU != nil {
			m.loraApply(be, y, in, sl(kc.loraU, kc.loraRank, N), kc.loraY.Slice(first*c.loraWidest(), N*c.loraWidest()), l, mod, N)
		}
	}
	be.EmbeddingForward(x, P(lo.wte), P(lo.wpe), ids, pos, N, C)
	for l, lp := range lo.layers {
		ln := sl(kc.ln, C, N)
		m.normOn(be, ln, sl(kc.mean, 1, N), sl(kc.rstd, 1, N), x, lp.norm1w, lp.norm1b, N)
		q := sl(kc.q, QD, N)
		kn, vn := newKV(l)
		be.MatMulForward(q, ln, P(lp.wq), P(lp.bq), N, C, QD)
		be.MatMulForward(kn, ln, P(lp.wk), P(lp.bk), N, C, KVD)
		be.MatMulForward(vn, ln, P(lp.wv), P(lp.bv), N, C, KVD)
		adapt(q, ln, l, loraQ)
		adapt(kn, ln, l, loraK)
		adapt(vn, ln, l, loraV)
		if c.Family == Llama {
			m.ropeOn(be, q, pos, N, c.Heads, true)
			m.ropeOn(be, kn, pos, N, c.KVHeads, true)
		}
		k, v, half := store(l)
		attOut := sl(kc.attOut, QD, N)
		att := kc.att.Slice(attOff, shape.B*c.Heads*shape.Tq*shape.Tk)
		if half {
			be.(gpu.HalfKV).AttentionForwardHalf(attOut, att, q, k, v, shape)
		} else {
			be.AttentionForward(attOut, att, q, k, v, shape)
		}
		tmp := sl(kc.tmp, C, N)
		be.MatMulForward(tmp, attOut, P(lp.wo), P(lp.bo), N, QD, C)
		adapt(tmp, attOut, l, loraO)
		be.Add(x2, x, tmp, N*C)
		m.normOn(be, ln, sl(kc.mean, 1, N), sl(kc.rstd, 1, N), x2, lp.norm2w, lp.norm2b, N)
		act := sl(kc.act, H, N)
		if c.Family == GPT2 {
			fc := sl(kc.fc, H, N)
			be.MatMulForward(fc, ln, P(lp.wfc), P(lp.bfc), N, C, H)
			be.GELUForward(act, fc, N*H)
		} else {
			fc := sl(kc.fc, 2*H, N)
			be.MatMulForward(fc, ln, P(lp.wfc), nil, N, C, 2*H)
			adapt(fc, ln, l, loraGate)
			adapt(fc, ln, l, loraUp)
			be.SwiGLUForward(act, fc, N, H)
		}
		be.MatMulForward(tmp, act, P(lp.wproj), P(lp.bproj), N, H, C)
		adapt(tmp, act, l, loraDown)
		be.Add(x, x2, tmp, N*C)
	}
	m.normOn(be, sl(kc.lnf, C, N), sl(kc.mean, 1, N), sl(kc.rstd, 1, N), x, lo.normfW, lo.normfB, N)
}

// inferHead projects n rows of the final hidden state, from row src, to
// logits in kc.logs from row dst (prefill part p's last token to row p; a
// decoding part's slots to their own rows).
func (m *Model) inferHead(be gpu.Backend, kc *Cache, src, dst, n int) {
	C, V := m.Cfg.Dim, m.Cfg.Vocab
	be.MatMulForward(kc.logs.Slice(dst*V, n*V), kc.lnf.Slice(src*C, n*C), m.view(m.params, m.lo.lmHead), nil, n, C, V)
}

// downloadLogits copies the first n rows of kc.logs to the host (n, V).
func (m *Model) downloadLogits(kc *Cache, n int) ([]float32, error) {
	logits := make([]float32, n*m.Cfg.Vocab)
	m.be.Download(logits, kc.logs.Slice(0, n*m.Cfg.Vocab))
	if err := m.be.Sync(); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	return logits, nil
}

// ForwardLogits runs the full (training) forward pass over inputs (B*T) and
// returns every position's logits (B*T, V): the reference the cached path
// must agree with, and what a prefix-recomputing generator would use.
func (m *Model) ForwardLogits(inputs []int32, B, T int) ([]float32, error) {
	defer func(rows int) { m.LogitRows = rows }(m.LogitRows)
	m.LogitRows = 0 // every row's logits, kept
	if _, _, err := m.Forward(inputs, inputs, B, T, false); err != nil {
		return nil, err
	}
	logits := make([]float32, B*T*m.Cfg.Vocab)
	m.be.Download(logits, m.own.acts.logits)
	m.own.acts.inputs = nil // nothing to differentiate: the caller asked for logits only
	return logits, m.be.Sync()
}
