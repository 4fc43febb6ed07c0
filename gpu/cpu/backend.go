package cpu

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/corl-project/corl/gpu"
)

// Buffer is host memory; Data exposes it without a copy.
type Buffer struct{ d []float32 }

// Len implements gpu.Buffer.
func (b *Buffer) Len() int { return len(b.d) }

// Slice implements gpu.Buffer.
func (b *Buffer) Slice(off, n int) gpu.Buffer {
	if off < 0 || n < 0 || off+n > len(b.d) {
		panic("gpu: cpu buffer slice out of range")
	}
	return &Buffer{b.d[off : off+n : off+n]}
}

// Data returns the float32 slice behind a cpu buffer (nil for a nil buffer).
func Data(b gpu.Buffer) []float32 {
	if b == nil {
		return nil
	}
	cb, ok := b.(*Buffer)
	if !ok {
		panic(fmt.Sprintf("gpu: buffer of type %T passed to the cpu backend", b))
	}
	if cb == nil {
		return nil
	}
	return cb.d
}

// Wrap makes a gpu.Buffer of an existing slice without copying.
func Wrap(d []float32) gpu.Buffer { return &Buffer{d} }

// Backend is the CPU backend. The zero value is not usable; call New. Like a
// device stream, one Backend runs one operation at a time: it is not safe for
// concurrent use.
type Backend struct {
	threads       int
	pool          *gemmScratch   // the parallel GEMM's
	serialScratch []*gemmScratch // one per worker, for GEMMs inside parallel work
	rope          map[ropeKey]ropeTab
	frozen        []*frozen  // FreezeWeights
	parts         []*Backend // Split's one-thread views, kept for their scratch
	owner         *Backend   // a Split part's backend, whose frozen weights it reads
	team          *team      // helpers for parallel regions (threads > 1)
	// matmulFLOPs counts the FLOPs of the matmuls run (MatMulFLOPs),
	// shared with the Split parts.
	matmulFLOPs *atomic.Int64
}

// MatMulFLOPs is the FLOPs of the MatMulForward and MatMulBackward
// products this backend and its Split parts have run: what a benchmark
// divides by a matmul peak for the time that work alone would take.
func (be *Backend) MatMulFLOPs() float64 { return float64(be.matmulFLOPs.Load()) }

// Split implements gpu.Splitter: n one-thread backends over the same
// memory, each with its own GEMM scratch, that see the weights frozen here
// (packed once, shared). A batch cut into n parts, each run start to end on
// its own part, keeps every thread busy without a synchronisation per
// operation; rows compute the same bits in any part, as in any batch. The
// parts may run concurrently with each other, not with be.
func (be *Backend) Split(n int) []gpu.Backend {
	for len(be.parts) < n {
		be.parts = append(be.parts, &Backend{threads: 1, pool: newGemmScratch(1),
			serialScratch: []*gemmScratch{newGemmScratch(1)}, rope: map[ropeKey]ropeTab{}, owner: be, matmulFLOPs: be.matmulFLOPs})
	}
	out := make([]gpu.Backend, n)
	for i, p := range be.parts[:n] {
		out[i] = p
	}
	return out
}

// New returns a CPU backend using threads goroutines (0: all cores).
func New(threads int) *Backend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	be := &Backend{threads: threads, pool: newGemmScratch(threads), serialScratch: make([]*gemmScratch, threads),
		rope: map[ropeKey]ropeTab{}, matmulFLOPs: new(atomic.Int64)}
	for i := range be.serialScratch {
		be.serialScratch[i] = newGemmScratch(1)
	}
	if threads > 1 {
		be.team = newTeam(threads)
		// The helpers hold the team, not the backend: once the backend is
		// unreachable they are stopped.
		runtime.SetFinalizer(be, func(be *Backend) { be.team.close() })
	}
	return be
}

var _ gpu.Backend = (*Backend)(nil)

// Name implements gpu.Backend.
func (be *Backend) Name() string { return fmt.Sprintf("cpu(%s, %d threads)", kernelName, be.threads) }

// Threads implements gpu.Backend.
func (be *Backend) Threads() int { return be.threads }

// Alloc implements gpu.Backend.
func (be *Backend) Alloc(n int) gpu.Buffer { return &Buffer{make([]float32, n)} }

// Free implements gpu.Backend; memory is returned by the garbage collector.
func (be *Backend) Free(b gpu.Buffer) {}

// Upload implements gpu.Backend.
func (be *Backend) Upload(dst gpu.Buffer, src []float32) {
	d := Data(dst)
	if len(src) > len(d) {
		panic("gpu: upload larger than buffer")
	}
	copy(d, src)
}

// Download implements gpu.Backend.
func (be *Backend) Download(dst []float32, src gpu.Buffer) {
	s := Data(src)
	if len(dst) > len(s) {
		panic("gpu: download larger than buffer")
	}
	copy(dst, s)
}

// Zero implements gpu.Backend.
func (be *Backend) Zero(b gpu.Buffer) { clear(Data(b)) }

// Copy implements gpu.Backend.
func (be *Backend) Copy(dst, src gpu.Buffer) {
	if dst.Len() != src.Len() {
		panic("gpu: copy between buffers of different length")
	}
	copy(Data(dst), Data(src))
}

// ScatterRows implements gpu.RowScatterer.
func (be *Backend) ScatterRows(dst gpu.Buffer, at []int, src gpu.Buffer, width int) {
	d, s := Data(dst), Data(src)
	if len(at)*width > len(s) {
		panic("gpu: scatter of more rows than the source holds")
	}
	for i, o := range at {
		if o >= 0 {
			copy(d[o:o+width], s[i*width:(i+1)*width])
		}
	}
}

// Sync implements gpu.Backend; the CPU backend is synchronous.
func (be *Backend) Sync() error { return nil }
