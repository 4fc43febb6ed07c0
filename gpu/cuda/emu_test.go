package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/corl-project/corl/gpu/gputest"
)

// emuPath is the emulated driver (make cuda-emu), or the test skips.
func emuPath(t *testing.T) string {
	t.Helper()
	return Emulator(t, filepath.Join("..", ".."))
}

func openEmu(t *testing.T, cublas string) *Backend {
	t.Helper()
	be, err := Open(Options{Driver: emuPath(t), CUBLAS: cublas})
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// TestEmulatedConformance runs the whole conformance suite, the large shapes
// included, on the emulated driver with corl's own GEMM kernel.
func TestEmulatedConformance(t *testing.T) {
	be := openEmu(t, "off")
	t.Logf("device: %s", be.Name())
	gputest.RunAll(t, be)
}

// TestEmulatedConformanceCUBLAS runs the suite again with GEMM through the
// cuBLAS binding, on the emulator's stand-in library: the column-major
// argument order, transposes, leading dimensions and beta (accumulate).
func TestEmulatedConformanceCUBLAS(t *testing.T) {
	be := openEmu(t, "")
	if be.blas == nil || !strings.Contains(be.Name(), "cuBLAS") {
		t.Fatalf("%s: the emulator's cuBLAS stand-in was not bound", be.Name())
	}
	t.Logf("device: %s", be.Name())
	gputest.RunAll(t, be)
}

// faultPTX declares the entries of the fault kernels (emu/faults.cu), which
// the emulator has built in: it reads only the entries' parameters and
// shared memory from an image, so a declaration stands in for nvcc's output.
const faultPTX = `.version 7.8
.target sm_90
.address_size 64
.visible .entry emu_exit_before_barrier(
	.param .u64 p0,
	.param .u32 p1
)
{
}
.visible .entry emu_split_barrier(
	.param .u64 p0
)
{
}
.visible .entry emu_block_sum(
	.param .u64 p0,
	.param .u64 p1
)
{
	.shared .align 4 .b8 buf[1024];
}
.visible .entry emu_divide(
	.param .u64 p0,
	.param .u32 p1
)
{
}
.visible .entry emu_deep_stack(
	.param .u64 p0,
	.param .u32 p1
)
{
}
`

// faultKernels loads faultPTX into be's context.
func faultKernels(t *testing.T, be *Backend) map[string]uintptr {
	t.Helper()
	defer be.bind()()
	var mod uintptr
	if rc := be.d.cuModuleLoadData(&mod, cstr(faultPTX)); rc != 0 {
		t.Fatalf("load the fault kernels: %s", be.d.errString(rc))
	}
	fns := map[string]uintptr{}
	for _, k := range []string{"emu_exit_before_barrier", "emu_split_barrier", "emu_block_sum", "emu_divide", "emu_deep_stack"} {
		var f uintptr
		if rc := be.d.cuModuleGetFunction(&f, mod, cstr(k)); rc != 0 {
			t.Fatalf("kernel %s: %s", k, be.d.errString(rc))
		}
		fns[k] = f
	}
	return fns
}

// wantSyncError wants be's context lost with an error saying each of want.
func wantSyncError(t *testing.T, be *Backend, want ...string) {
	t.Helper()
	err := be.Sync()
	if err == nil {
		t.Fatal("the fault went unreported: Sync returned nil")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("Sync: %v\nwant it to say %q", err, w)
		}
	}
	t.Logf("reported: %v", err)
	// As on a GPU, the context stays lost: the next call fails too.
	if err := be.Sync(); err == nil {
		t.Fatal("the error was not sticky: a second Sync returned nil")
	}
}

// wantPanic runs f and wants a panic whose message says each of want.
func wantPanic(t *testing.T, f func(), want ...string) {
	t.Helper()
	var msg string
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		f()
	}()
	if msg == "" {
		t.Fatal("no error: the call was accepted")
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q\nwant it to say %q", msg, w)
		}
	}
	t.Logf("refused: %s", msg)
}

func TestEmuWritePastTheEnd(t *testing.T) {
	be := openEmu(t, "off")
	out, inp := be.Alloc(1000), be.Alloc(1001)
	be.GELUForward(out, inp, 1001) // thread 1000 writes out[1000]
	wantSyncError(t, be, "illegal memory access", "kernel gelu_forward, block (3,0,0) thread (232,0,0)",
		"illegal write", "0 bytes past the end of the 4000-byte allocation")
	// A new context starts clean.
	be2 := openEmu(t, "off")
	x := be2.Alloc(10)
	be2.GELUForward(x, x, 10)
	if err := be2.Sync(); err != nil {
		t.Fatalf("a fresh context after a fault: %v", err)
	}
}

func TestEmuReadPastTheEnd(t *testing.T) {
	be := openEmu(t, "off")
	out, inp := be.Alloc(1001), be.Alloc(1000)
	be.GELUForward(out, inp, 1001)
	wantSyncError(t, be, "illegal memory access", "illegal read", "past the end of the 4000-byte allocation")
}

// TestEmuKernelFaults launches each fault kernel (emu/faults.cu) on a fresh
// context and wants the fault reported, saying what and where. Deep
// recursion is first run shallow, which must pass.
func TestEmuKernelFaults(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		blocks uint32
		arg    int // the kernel's int argument
		want   []string
	}{
		{"emu_exit_before_barrier", 1, 100, []string{"unspecified launch failure", "is not reached by every thread of the block",
			"100 threads wait there, 156 have exited"}},
		{"emu_split_barrier", 2, -1, []string{"wait at different __syncthreads()", "faults.cu"}},
		{"emu_divide", 1, 0, []string{"integer division by zero", "kernel emu_divide"}},
		{"emu_deep_stack", 1, 1000, []string{"stack overflow"}},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			be := openEmu(t, "off")
			fns := faultKernels(t, be)
			out := be.Alloc(256)
			args := []uint64{dptr(out)}
			if tc.kernel == "emu_deep_stack" {
				be.launch(fns[tc.kernel], grid(1), block, 0, dptr(out), i32(10))
				if err := be.Sync(); err != nil {
					t.Fatalf("10 levels of recursion: %v", err)
				}
			}
			if tc.arg >= 0 {
				args = append(args, i32(tc.arg))
			}
			be.launch(fns[tc.kernel], grid(int(tc.blocks)), block, 0, args...)
			wantSyncError(t, be, tc.want...)
		})
	}
}

// TestEmuLimits: launches a GPU refuses are refused before they run, and the
// context survives them (they are argument errors, not faults).
func TestEmuLimits(t *testing.T) {
	be := openEmu(t, "off")
	x := be.Alloc(4)
	add := be.fn["add"]
	args := []uint64{dptr(x), dptr(x), dptr(x), i32(4)}
	wantPanic(t, func() { be.launch(add, grid(1), [3]uint32{2048, 1, 1}, 0, args...) },
		"invalid argument", "launch of add: block (2048,1,1) is outside the device's limits")
	wantPanic(t, func() { be.launch(add, grid(1), [3]uint32{32, 32, 2}, 0, args...) }, "block (32,32,2)")
	wantPanic(t, func() { be.launch(add, [3]uint32{1, 70000, 1}, block, 0, args...) }, "grid (1,70000,1)")
	wantPanic(t, func() { be.launch(add, grid(1), block, 48*1024+1, args...) },
		"0 bytes of static and 49153 of dynamic shared memory exceed the 49152")
	// gemm declares 8 KiB of shared memory in its PTX: 40 KiB more fit, 40 KiB and a byte do not.
	gemmArgs := []uint64{dptr(x), dptr(x), dptr(x), i32(1), i32(1), i32(1), i32(1), i32(1), i32(1), 0, 0, 0}
	wantPanic(t, func() { be.launch(be.fn["gemm"], grid(1), block, 40*1024+1, gemmArgs...) },
		"launch of gemm: 8192 bytes of static and 40961 of dynamic")
	be.launch(be.fn["gemm"], grid(1), block, 40*1024, gemmArgs...)
	wantPanic(t, func() { be.launch(add, grid(1), block, 0, args[:3]...) }, "launch of add with 3 arguments; it takes 4")
	wantPanic(t, func() { be.launch(add, grid(1), block, 0, append(args, 0)...) }, "with more than 4 arguments; it takes 4")
	if err := be.Sync(); err != nil {
		t.Fatalf("refused launches lost the context: %v", err)
	}
}

func TestEmuUnknownKernelAndBadImage(t *testing.T) {
	be := openEmu(t, "off")
	defer be.bind()()
	var mod, f uintptr
	if rc := be.d.cuModuleLoadData(&mod, cstr(ptx90)); rc != 0 {
		t.Fatal(be.d.errString(rc))
	}
	rc := be.d.cuModuleGetFunction(&f, mod, cstr("no_such_kernel"))
	if rc != 500 || !strings.Contains(be.d.errString(rc), "the module has no kernel named no_such_kernel") {
		t.Fatalf("an unknown kernel: rc %d, %s", rc, be.d.errString(rc))
	}
	rc = be.d.cuModuleLoadData(&mod, cstr("ELF? no: not a module"))
	if rc != 200 || !strings.Contains(be.d.errString(rc), "not PTX") {
		t.Fatalf("a bad image: rc %d, %s", rc, be.d.errString(rc))
	}
	// An entry the emulator has no host build of (a stale emulator build).
	rc = be.d.cuModuleLoadData(&mod, cstr(".version 7.8\n.target sm_90\n.visible .entry brand_new(\n.param .u64 p0\n)\n{\n}\n"))
	if rc != 200 || !strings.Contains(be.d.errString(rc), "defines brand_new, which this emulator build lacks") {
		t.Fatalf("an unknown entry: rc %d, %s", rc, be.d.errString(rc))
	}
}

// TestEmuContextIsPerThread: as with a real driver, a context is current on
// the OS thread that made it current, so a call from another thread without
// one fails; the backend binds its context around every call (bind).
func TestEmuContextIsPerThread(t *testing.T) {
	be := openEmu(t, "off")
	rc := make(chan int32)
	go func() {
		runtime.LockOSThread() // this goroutine's thread alone, discarded when it ends
		be.d.cuCtxSetCurrent(0)
		var p uintptr
		rc <- be.d.cuMemAlloc(&p, 64)
		be.Free(be.Alloc(16)) // bind makes the context current again
		rc <- 0
	}()
	if got := <-rc; got != 201 {
		t.Fatalf("cuMemAlloc on a thread without a current context: rc %d, want 201 (invalid context)", got)
	}
	<-rc
	// Through the backend, from goroutines on any thread, it works.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			b := be.Alloc(16)
			be.Free(b)
		}()
		wg.Wait()
	}
}

// TestEmuScheduleOrders: a block's threads give block_sum's exact tree sum
// whichever order the emulator runs them in between barriers.
func TestEmuScheduleOrders(t *testing.T) {
	be := openEmu(t, "off")
	fns := faultKernels(t, be)
	setOrder := emuSetOrder(t, be)
	in := make([]float32, 3*256)
	for i := range in {
		in[i] = float32(i%17) - 8.25
	}
	var want []float32
	for _, o := range []struct {
		order int32
		seed  uint64
	}{{0, 0}, {1, 0}, {2, 1}, {2, 7}} {
		setOrder(o.order, o.seed)
		x, out := be.Alloc(len(in)), be.Alloc(3)
		be.Upload(x, in)
		be.launch(fns["emu_block_sum"], grid(3), block, 0, dptr(out), dptr(x))
		got := make([]float32, 3)
		be.Download(got, out)
		if want == nil {
			want = got
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("order %d seed %d: block %d sums to %v, forward order to %v", o.order, o.seed, i, got[i], want[i])
			}
		}
	}
	setOrder(0, 0)
}

// emuSetOrder binds the emulator's test hook that sets the order.
func emuSetOrder(t *testing.T, be *Backend) func(order int32, seed uint64) {
	lib, err := openLib(be.d.path)
	if err != nil {
		t.Fatal(err)
	}
	var set func(order int32, seed uint64)
	purego.RegisterLibFunc(&set, lib, "corl_emu_set_order")
	return set
}

// TestEmuCUBLASChecks: the cuBLAS binding's failures name the call, and a
// library asked for by name is never silently replaced by the kernel.
func TestEmuCUBLASChecks(t *testing.T) {
	be := openEmu(t, "")
	x := be.Alloc(64)
	wantPanic(t, func() { be.blasGemm(dptr(x), dptr(x), dptr(x), 4, 4, 4, 2, 4, 4, false, false, false) },
		"cublasSgemm M=4 N=4 K=4: status 7", "ldb 2, ldc 4; at least 4, 4, 4")
	if _, err := Open(Options{Driver: emuPath(t), CUBLAS: "/nonexistent/libcublas.so.12"}); err == nil ||
		!strings.Contains(err.Error(), "cannot open /nonexistent/libcublas.so.12") {
		t.Fatalf("a missing cuBLAS asked for by name: %v", err)
	}
	if be := openEmu(t, "off"); be.blas != nil || strings.Contains(be.Name(), "cuBLAS") {
		t.Fatalf("CUBLAS off still bound it: %s", be.Name())
	}
	// An operand past its allocation is an illegal address, as on a GPU.
	small := be.Alloc(15)
	wantPanic(t, func() { be.MatMulForward(x, small, x, nil, 4, 4, 4) }, "status 13", "cublasSgemm's B",
		"past the end of the 60-byte allocation")
	wantSyncError(t, be, "illegal memory access")
}

// TestEmuTF32: with TF32 the stand-in rounds GEMM inputs to 10 mantissa bits
// (as tensor cores do): results move, by no more than TF32's rounding.
func TestEmuTF32(t *testing.T) {
	fp32 := openEmu(t, "")
	tf32, err := Open(Options{Driver: emuPath(t), TF32: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tf32.Name(), "TF32") {
		t.Fatalf("name %s does not say TF32", tf32.Name())
	}
	const N, C, OC = 8, 256, 8
	r := rand.New(rand.NewPCG(1, 2))
	inp, w := make([]float32, N*C), make([]float32, OC*C)
	for i := range inp {
		inp[i] = r.Float32()*2 - 1
	}
	for i := range w {
		w[i] = r.Float32()*2 - 1
	}
	run := func(be *Backend) []float32 {
		a, b, out := be.Alloc(len(inp)), be.Alloc(len(w)), be.Alloc(N*OC)
		be.Upload(a, inp)
		be.Upload(b, w)
		be.MatMulForward(out, a, b, nil, N, C, OC)
		got := make([]float32, N*OC)
		be.Download(got, out)
		return got
	}
	a, b := run(fp32), run(tf32)
	moved := 0
	for i := range a {
		if a[i] != b[i] {
			moved++
		}
		// Each of C products carries a relative error of at most 2^-10
		// (both inputs rounded to 2^-11): |error| <= C * 2^-10 for unit inputs.
		if d := math.Abs(float64(a[i] - b[i])); d > C*math.Pow(2, -10) {
			t.Fatalf("[%d]: fp32 %v, tf32 %v: apart by more than TF32 rounding allows", i, a[i], b[i])
		}
	}
	if moved == 0 {
		t.Fatal("TF32 changed nothing: the math mode did not reach the library")
	}
}

// TestEmuMemory: the emulated device reports an H100's 80 GiB and frees as
// allocations come and go.
func TestEmuMemory(t *testing.T) {
	be := openEmu(t, "off")
	free0, total, err := be.Memory()
	if err != nil {
		t.Fatal(err)
	}
	if total != 80<<30 || free0 > total {
		t.Fatalf("free %d of %d bytes, want of 80 GiB", free0, total)
	}
	b := be.Alloc(1 << 20)
	free1, _, _ := be.Memory()
	be.Free(b)
	free2, _, _ := be.Memory()
	if free0-free1 != 4<<20 || free2 != free0 {
		t.Fatalf("free %d, %d after allocating 4 MiB, %d after freeing it", free0, free1, free2)
	}
}

// TestEmuHelpersFirstBlock: the first blocks a helper thread runs compute
// what its later ones do. Built with TLS descriptors, the emulator lost a
// helper's vector registers the first time the thread reached the
// kernels' thread-local __shared__ storage (glibc before 2.40), so the
// first multi-block launch of a process summed some rows wrongly; it runs
// here as the first launch of a process of its own (this test binary
// again), on two host threads.
func TestEmuHelpersFirstBlock(t *testing.T) {
	if os.Getenv("CORL_EMU_FIRST_BLOCK") == "" {
		emu := emuPath(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestEmuHelpersFirstBlock$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "CORL_EMU_FIRST_BLOCK=1", "CORL_CUDA_EMU_THREADS=2", "CORL_CUDA_EMU="+emu)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the first launch of a process: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "rows alike") {
			t.Fatalf("the child ran no check:\n%s", out)
		}
		return
	}
	be := openEmu(t, "off")
	r := rand.New(rand.NewPCG(1, 2))
	N, C := 16, 64
	x, w := make([]float32, N*C), make([]float32, C)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	for i := range w {
		w[i] = r.Float32()
	}
	in, wb := be.Alloc(N*C), be.Alloc(C)
	be.Upload(in, x)
	be.Upload(wb, w)
	run := func() []float32 {
		out, rstd := be.Alloc(N*C), be.Alloc(N)
		be.RMSNormForward(out, rstd, in, wb, N, C, 1e-5)
		got := make([]float32, N)
		be.Download(got, rstd)
		return got
	}
	first, second := run(), run()
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("row %d: rstd %v in the process's first launch, %v in the next", i, first[i], second[i])
		}
	}
	t.Logf("%d rows alike", N)
}

// TestEmuGemmExBF16: matmuls wholly in bfloat16 through the cuBLAS
// binding's cublasGemmEx (the stand-in's: bfloat16 operands widened
// exactly, float32 sums in k order) give corl's gemm_bf16 over the
// rounded input bit for bit, as both sum each output in k order: the
// column-major mapping, transposes and leading dimensions of the GemmEx
// call are right on shapes past one tile in every direction.
func TestEmuGemmExBF16(t *testing.T) {
	blasBe, own := openEmu(t, ""), openEmu(t, "off")
	if blasBe.blas == nil || blasBe.blas.gemmEx == nil {
		t.Fatal("the emulator's cuBLAS stand-in has no cublasGemmEx bound")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 70, 5}, {65, 17, 129}, {130, 96, 70}} {
		N, C, OC := sh[0], sh[1], sh[2]
		w, x := make([]float32, OC*C), make([]float32, N*C)
		for i := range w {
			w[i] = r.Float32()*2 - 1
		}
		for i := range x {
			x[i] = r.Float32()*2 - 1
		}
		run := func(be *Backend) []float32 {
			wb, xb, ob := be.Alloc(OC*C), be.Alloc(N*C), be.Alloc(N*OC)
			be.Upload(wb, w)
			be.Upload(xb, x)
			release := be.FreezeWeightsBF16Compute(wb)
			be.MatMulForward(ob, xb, wb, nil, N, C, OC)
			release()
			out := make([]float32, N*OC)
			be.Download(out, ob)
			return out
		}
		a, b := run(blasBe), run(own)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%v: element %d: cublasGemmEx %v, gemm_bf16 %v", sh, i, a[i], b[i])
			}
		}
	}
}
