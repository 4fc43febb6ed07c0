package cuda

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"unsafe"

	"github.com/corl-project/corl/gpu"
)

//go:generate go run ./gen

//go:embed kernels_compute80.ptx
var ptx80 string

//go:embed kernels_compute90.ptx
var ptx90 string

// Buffer is device memory: a pointer and a length in float32 elements.
type Buffer struct {
	ptr  uintptr
	n    int
	root bool // owns the allocation (not a Slice)
}

// Len implements gpu.Buffer.
func (b *Buffer) Len() int { return b.n }

// Slice implements gpu.Buffer.
func (b *Buffer) Slice(off, n int) gpu.Buffer {
	if off < 0 || n < 0 || off+n > b.n {
		panic("gpu: cuda buffer slice out of range")
	}
	return &Buffer{ptr: b.ptr + uintptr(off)*4, n: n}
}

func dptr(b gpu.Buffer) uint64 {
	if b == nil {
		return 0
	}
	cb, ok := b.(*Buffer)
	if !ok {
		panic(fmt.Sprintf("gpu: buffer of type %T passed to the cuda backend", b))
	}
	if cb == nil {
		return 0
	}
	return uint64(cb.ptr)
}

// Backend runs every op on one CUDA device, on the default stream, in issue
// order. Like the CPU backend it is not safe for concurrent use.
type Backend struct {
	name  string
	d     *driver
	ctx   uintptr
	fn    map[string]uintptr
	cache map[int][]uintptr // free device blocks by rounded size (bytes)
	sizes map[uintptr]int
	// exact sizes allocations to the byte (rounded to 4) instead of powers
	// of two, so that the emulated driver's guard pages sit right after each
	// buffer's last element.
	exact bool
	blas  *blas // GEMM through cuBLAS; nil: corl's own kernel
	// frozen lists the regions frozen for generation, newest last
	// (freeze.go).
	frozen []*frozen
}

var _ gpu.Backend = (*Backend)(nil)

// Options choose the libraries a Backend opens. The zero value is what New
// uses: $CORL_CUDA_DRIVER (else libcuda.so.1), $CORL_CUBLAS (else the
// system's libcublas, and corl's own GEMM kernel without it; "off" for the
// kernel always), TF32 when $CORL_CUDA_TF32 is 1.
type Options struct {
	Driver string // the driver library's path or name
	CUBLAS string // the cuBLAS library's path or name; "off": corl's GEMM kernel
	TF32   bool   // let cuBLAS round GEMM inputs to TF32 (tensor cores)
}

func (o Options) withEnv() Options {
	if o.Driver == "" {
		o.Driver = driverPath()
	}
	if o.CUBLAS == "" {
		o.CUBLAS = os.Getenv("CORL_CUBLAS")
	}
	if os.Getenv("CORL_CUDA_TF32") == "1" {
		o.TF32 = true
	}
	return o
}

// New opens device ordinal 0 with the default Options, or returns an error
// wrapping ErrNoDevice.
func New() (*Backend, error) { return Open(Options{}) }

// Open opens device ordinal 0 through the libraries o names.
func Open(o Options) (*Backend, error) {
	o = o.withEnv()
	d, err := loadDriver(o.Driver)
	if err != nil {
		return nil, err
	}
	var count int32
	if rc := d.cuDeviceGetCount(&count); rc != 0 || count == 0 {
		return nil, fmt.Errorf("%w: the driver reports %d devices", ErrNoDevice, count)
	}
	be := &Backend{d: d, fn: map[string]uintptr{}, cache: map[int][]uintptr{}, sizes: map[uintptr]int{}, exact: d.emulated()}
	var dev int32
	be.check(d.cuDeviceGet(&dev, 0), "device")
	var major, minor int32
	be.check(d.cuDeviceGetAttribute(&major, attrComputeMajor, dev), "attribute")
	be.check(d.cuDeviceGetAttribute(&minor, attrComputeMinor, dev), "attribute")
	if major < 8 {
		return nil, fmt.Errorf("%w: compute capability %d.%d; corl's kernels need 8.0 or newer", ErrNoDevice, major, minor)
	}
	nameBuf := make([]byte, 256)
	be.check(d.cuDeviceGetName(&nameBuf[0], int32(len(nameBuf)), dev), "device name")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	be.check(d.cuCtxCreate(&be.ctx, 0, dev), "context")
	image := ptx80
	if major >= 9 {
		image = ptx90
	}
	var mod uintptr
	if rc := d.cuModuleLoadData(&mod, cstr(image)); rc != 0 {
		return nil, fmt.Errorf("cuda: load kernels: %s", d.errString(rc))
	}
	for _, k := range kernelNames {
		var f uintptr
		if rc := d.cuModuleGetFunction(&f, mod, cstr(k)); rc != 0 {
			return nil, fmt.Errorf("cuda: kernel %s: %s", k, d.errString(rc))
		}
		be.fn[k] = f
	}
	if o.CUBLAS == "" && d.emulated() {
		o.CUBLAS = o.Driver // the emulator carries a stand-in for the cuBLAS calls
	}
	gemm := ""
	if o.CUBLAS != "off" {
		b, err := openBLAS(o.CUBLAS, o.TF32)
		switch {
		case err == nil:
			be.blas = b
			gemm = ", cuBLAS"
			if o.TF32 {
				gemm += " TF32"
			}
		case o.CUBLAS != "":
			return nil, fmt.Errorf("cuda: %w", err) // asked for by name: no quiet fallback
		}
	}
	be.name = fmt.Sprintf("cuda(%s, sm_%d%d%s)", goString(&nameBuf[0]), major, minor, gemm)
	return be, nil
}

var kernelNames = []string{"embedding_forward", "embedding_backward", "gemm", "gemm_bf16", "round_bf16", "round_bf16_f32", "add_bias", "col_sums",
	"rmsnorm_forward", "rmsnorm_backward_input", "rmsnorm_backward_weight", "layernorm_forward",
	"layernorm_backward_input", "layernorm_backward_params", "rope", "attention_forward", "attention_forward_half", "store_half",
	"attention_backward_query", "attention_backward_kv", "flash_attention_forward", "flash_attention_backward_query",
	"flash_attention_backward_kv", "gelu_forward", "gelu_backward", "swiglu_forward",
	"swiglu_backward", "add", "scale", "softmax_forward", "softmax_backward", "logsoftmax_forward",
	"logsoftmax_backward", "token_logprobs", "token_logprobs_backward", "sum_squares", "adamw"}

// Memory implements gpu.MemoryReporter: the device's free and total bytes,
// the backend's cache of freed allocations counted as free.
func (be *Backend) Memory() (free, total int64, err error) {
	defer be.bind()()
	var f, t uint64
	if rc := be.d.cuMemGetInfo(&f, &t); rc != 0 {
		return 0, 0, fmt.Errorf("cuMemGetInfo: %s", be.d.errString(rc))
	}
	cached := 0
	for size, ptrs := range be.cache {
		cached += size * len(ptrs)
	}
	return int64(f) + int64(cached), int64(t), nil
}

// Name implements gpu.Backend.
func (be *Backend) Name() string { return be.name }

// Threads implements gpu.Backend: one stream.
func (be *Backend) Threads() int { return 1 }

// alloc returns bytes of device memory from the cache (sizes rounded up to a
// power of two from 256 bytes; under the emulator, to 4 bytes) or the driver.
func (be *Backend) alloc(bytes int) uintptr {
	size := max(4, (bytes+3)&^3)
	if !be.exact {
		size = 256
		for size < bytes {
			size <<= 1
		}
	}
	if free := be.cache[size]; len(free) > 0 {
		p := free[len(free)-1]
		be.cache[size] = free[:len(free)-1]
		return p
	}
	var p uintptr
	defer be.bind()()
	be.check(be.d.cuMemAlloc(&p, uint64(size)), "alloc")
	be.sizes[p] = size
	return p
}

func (be *Backend) release(p uintptr) { be.cache[be.sizes[p]] = append(be.cache[be.sizes[p]], p) }

// Alloc implements gpu.Backend (zero-filled).
func (be *Backend) Alloc(n int) gpu.Buffer {
	b := &Buffer{ptr: be.alloc(max(n, 1) * 4), n: n, root: true}
	be.Zero(b)
	return b
}

// Free implements gpu.Backend: the memory returns to the cache.
func (be *Backend) Free(b gpu.Buffer) {
	if cb, ok := b.(*Buffer); ok && cb.root {
		be.release(cb.ptr)
		cb.root = false
	}
}

// Upload implements gpu.Backend.
func (be *Backend) Upload(dst gpu.Buffer, src []float32) {
	if len(src) > dst.Len() {
		panic("gpu: upload larger than buffer")
	}
	if len(src) > 0 {
		defer be.bind()()
		be.check(be.d.cuMemcpyHtoD(uintptr(dptr(dst)), unsafe.Pointer(&src[0]), uint64(4*len(src))), "upload")
	}
}

// Download implements gpu.Backend.
func (be *Backend) Download(dst []float32, src gpu.Buffer) {
	if len(dst) > src.Len() {
		panic("gpu: download larger than buffer")
	}
	if len(dst) > 0 {
		defer be.bind()()
		be.check(be.d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uintptr(dptr(src)), uint64(4*len(dst))), "download")
	}
}

// Zero implements gpu.Backend.
func (be *Backend) Zero(b gpu.Buffer) {
	if b.Len() > 0 {
		defer be.bind()()
		be.check(be.d.cuMemsetD32(uintptr(dptr(b)), 0, uint64(b.Len())), "memset")
	}
}

// Copy implements gpu.Backend.
func (be *Backend) Copy(dst, src gpu.Buffer) {
	if dst.Len() != src.Len() {
		panic("gpu: copy between buffers of different length")
	}
	if dst.Len() > 0 {
		defer be.bind()()
		be.check(be.d.cuMemcpyDtoD(uintptr(dptr(dst)), uintptr(dptr(src)), uint64(4*dst.Len())), "copy")
	}
}

// Sync implements gpu.Backend.
func (be *Backend) Sync() error {
	defer be.bind()()
	if rc := be.d.cuCtxSynchronize(); rc != 0 {
		return fmt.Errorf("cuda: %s", be.d.errString(rc))
	}
	return nil
}

// ints uploads host int32s into a temporary device block (released after the
// caller's launches are queued: the stream orders its reuse after them).
func (be *Backend) ints(v []int32) (uint64, func()) {
	if v == nil {
		return 0, func() {}
	}
	p := be.alloc(max(len(v), 1) * 4)
	if len(v) > 0 {
		defer be.bind()()
		be.check(be.d.cuMemcpyHtoD(p, unsafe.Pointer(&v[0]), uint64(4*len(v))), "upload ints")
	}
	return uint64(p), func() { be.release(p) }
}

func i32(v int) uint64     { return uint64(uint32(int32(v))) }
func f32(v float32) uint64 { return uint64(math.Float32bits(v)) }

const threads = 256

func blocks(n int) [3]uint32 { return [3]uint32{uint32((n + threads - 1) / threads), 1, 1} }
func grid(n int) [3]uint32   { return [3]uint32{uint32(n), 1, 1} }

var block = [3]uint32{threads, 1, 1}

func (be *Backend) run(name string, g [3]uint32, args ...uint64) {
	if g[0] == 0 {
		return
	}
	be.launch(be.fn[name], g, block, 0, args...)
}

// groups sorts token indices by key (stably) for the scatter-free embedding
// backward: order, group starts and the key of each group.
func groups(keys []int32) (order, starts, uniq []int32) {
	order = make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	for i, o := range order {
		if i == 0 || keys[o] != keys[order[i-1]] {
			starts = append(starts, int32(i))
			uniq = append(uniq, keys[o])
		}
	}
	return order, append(starts, int32(len(keys))), uniq
}
