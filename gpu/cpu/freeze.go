package cpu

import (
	"sync"
	"unsafe"

	"github.com/corl-project/corl/gpu"
)

// frozen is a region of memory whose owner promised not to write it (the
// weights during generation), with the matmul weights packed from it.
type frozen struct {
	lo, hi uintptr
	bf16   bool       // the matmuls read the weights rounded to bfloat16
	act    bool       // and round their inputs to bfloat16 too (gpu.BF16Compute)
	mu     sync.Mutex // Split's parts pack and look up concurrently
	packs  map[packKey]*packedMat
}

type packKey struct {
	at    uintptr
	C, OC int
}

// FreezeWeights implements gpu.WeightFreezer: while w is frozen, a
// MatMulForward whose weight lies in w packs that weight once and reuses
// the packing (decoding runs every weight matrix once per token, and
// packing a transposed weight costs as much as a small batch's product).
// The packed panels are the ones the per-call path would build, so results
// are bitwise unchanged.
func (be *Backend) FreezeWeights(w gpu.Buffer) (release func()) { return be.freeze(w, false, false) }

// FreezeWeightsBF16 implements gpu.BF16Freezer: FreezeWeights, with every
// matmul whose weight lies in w computing over the weight rounded to
// bfloat16 (bf16.go), packed once at half the bytes.
func (be *Backend) FreezeWeightsBF16(w gpu.Buffer) (release func()) { return be.freeze(w, true, false) }

// FreezeWeightsBF16Compute implements gpu.BF16Compute: FreezeWeightsBF16,
// with each such matmul's input rounded to bfloat16 first (a copy; the
// caller's activations are left as they were). Widened, the rounded
// operands' products are exact in float32, so the result is the float32
// matmul of the two rounded operands, bit for bit.
func (be *Backend) FreezeWeightsBF16Compute(w gpu.Buffer) (release func()) {
	return be.freeze(w, true, true)
}

// A freeze of the same memory, of the same kind, inside one still held
// shares that one's packing: the outer freeze's promise covers the inner
// one's time, so a benchmark that freezes a model's weights once around
// many generations (each of which freezes them again) packs them once, as
// another engine loads its model once. The region is listed again, on top,
// so it decides over any region frozen between the two.
func (be *Backend) freeze(w gpu.Buffer, bf16, act bool) (release func()) {
	d := Data(w)
	if len(d) == 0 {
		return func() {}
	}
	lo := uintptr(unsafe.Pointer(&d[0]))
	hi := lo + uintptr(len(d))*4
	var f *frozen
	for _, g := range be.frozen {
		if g.lo == lo && g.hi == hi && g.bf16 == bf16 && g.act == act {
			f = g
			break
		}
	}
	if f == nil {
		f = &frozen{lo: lo, hi: hi, bf16: bf16, act: act, packs: map[packKey]*packedMat{}}
	}
	be.frozen = append(be.frozen, f)
	return func() {
		// The newest listing: an outer freeze of the same region keeps
		// its place under the regions frozen after it.
		for i := len(be.frozen) - 1; i >= 0; i-- {
			if be.frozen[i] == f {
				be.frozen = append(be.frozen[:i], be.frozen[i+1:]...)
				return
			}
		}
	}
}

// frozenPack returns the packed form of weight w (OC x C, used transposed)
// when w lies in a frozen region, packing it on first use, and whether
// that region rounds the matmul's input to bfloat16; nil otherwise.
// A Split part looks in its backend's regions: it sees a freeze or a
// release as soon as they happen, with no copy of the list to go stale.
// The newest region holding w decides (a float32 freeze for scoring
// inside a bf16 one for generation scores in float32).
func (be *Backend) frozenPack(w []float32, C, OC int) (*packedMat, bool) {
	regions := be.frozen
	if be.owner != nil {
		regions = be.owner.frozen
	}
	if len(regions) == 0 || len(w) == 0 {
		return nil, false
	}
	at := uintptr(unsafe.Pointer(&w[0]))
	for i := len(regions) - 1; i >= 0; i-- {
		f := regions[i]
		if at < f.lo || at >= f.hi {
			continue
		}
		k := packKey{at, C, OC}
		f.mu.Lock()
		defer f.mu.Unlock()
		pm := f.packs[k]
		if pm == nil {
			pm = be.packMat(true, C, OC, w, C, f.bf16)
			f.packs[k] = pm
		}
		return pm, f.act
	}
	return nil, false
}

// frozenAct reports whether the newest frozen region holding w is one for
// bfloat16 compute (FreezeWeightsBF16Compute): its backward rounds too.
func (be *Backend) frozenAct(w []float32) bool {
	regions := be.frozen
	if be.owner != nil {
		regions = be.owner.frozen
	}
	if len(regions) == 0 || len(w) == 0 {
		return false
	}
	at := uintptr(unsafe.Pointer(&w[0]))
	for i := len(regions) - 1; i >= 0; i-- {
		if f := regions[i]; at >= f.lo && at < f.hi {
			return f.act
		}
	}
	return false
}

var (
	_ gpu.WeightFreezer = (*Backend)(nil)
	_ gpu.BF16Freezer   = (*Backend)(nil)
	_ gpu.BF16Compute   = (*Backend)(nil)
)
