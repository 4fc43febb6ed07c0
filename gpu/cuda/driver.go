package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoDevice is returned (wrapped) by New when no CUDA driver or device is
// present; callers fall back to, or stay on, the CPU backend.
var ErrNoDevice = errors.New("no CUDA device")

// DefaultDriver is the driver library opened when neither Options.Driver nor
// $CORL_CUDA_DRIVER names another (such as corl's emulated driver, built by
// `make cuda-emu`).
const DefaultDriver = "libcuda.so.1"

// driver is one CUDA driver library with the API functions corl uses, bound
// at run time (no cgo, no toolkit needed to build).
type driver struct {
	path string
	// detail explains the last error; only corl's emulated driver has it,
	// so it also tells that the driver is emulated.
	detail func() *byte

	cuInit               func(flags uint32) int32
	cuDeviceGetCount     func(count *int32) int32
	cuDeviceGet          func(dev *int32, ordinal int32) int32
	cuDeviceGetName      func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute func(v *int32, attr int32, dev int32) int32
	cuCtxCreate          func(ctx *uintptr, flags uint32, dev int32) int32
	cuCtxSetCurrent      func(ctx uintptr) int32
	cuCtxSynchronize     func() int32
	cuModuleLoadData     func(mod *uintptr, image *byte) int32
	cuModuleGetFunction  func(f *uintptr, mod uintptr, name *byte) int32
	cuMemAlloc           func(ptr *uintptr, size uint64) int32
	cuMemFree            func(ptr uintptr) int32
	cuMemGetInfo         func(free, total *uint64) int32
	cuMemcpyHtoD         func(dst uintptr, src unsafe.Pointer, size uint64) int32
	cuMemcpyDtoH         func(dst unsafe.Pointer, src uintptr, size uint64) int32
	cuMemcpyDtoD         func(dst, src uintptr, size uint64) int32
	cuMemsetD32          func(dst uintptr, v uint32, n uint64) int32
	cuLaunchKernel       func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	cuGetErrorString     func(code int32, s **byte) int32
}

const (
	attrComputeMajor = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeMinor = 76
)

var drivers struct {
	sync.Mutex
	byPath map[string]*driverOnce
}

type driverOnce struct {
	once sync.Once
	d    *driver
	err  error
}

// openLib dlopens a library, with the loader's reason on failure.
func openLib(path string) (uintptr, error) {
	// dlerror's text is per thread: read it on the thread that failed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lib, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		why := err.Error()
		if why == "" {
			why = "the dynamic loader gave no reason"
		}
		return 0, errors.New(why)
	}
	return lib, nil
}

// bindAll registers each function from lib under the first of its names
// that lib has; it returns the first name none of which lib has.
func bindAll(lib uintptr, fns []binding) (missing string) {
	for _, b := range fns {
		found := false
		for _, n := range b.names {
			if _, err := purego.Dlsym(lib, n); err == nil {
				purego.RegisterLibFunc(b.fn, lib, n)
				found = true
				break
			}
		}
		if !found && missing == "" {
			missing = b.names[0]
		}
	}
	return missing
}

type binding struct {
	fn    any
	names []string
}

// loadDriver opens the driver library at path once per process and binds
// its functions.
func loadDriver(path string) (*driver, error) {
	drivers.Lock()
	if drivers.byPath == nil {
		drivers.byPath = map[string]*driverOnce{}
	}
	o := drivers.byPath[path]
	if o == nil {
		o = &driverOnce{}
		drivers.byPath[path] = o
	}
	drivers.Unlock()
	o.once.Do(func() { o.d, o.err = openDriver(path) })
	return o.d, o.err
}

func openDriver(path string) (*driver, error) {
	lib, err := openLib(path)
	if err != nil {
		hint := ""
		if path == DefaultDriver {
			hint = ": is the NVIDIA driver installed?"
		}
		return nil, fmt.Errorf("%w: cannot open %s (%v%s)", ErrNoDevice, path, err, hint)
	}
	d := &driver{path: path}
	missing := bindAll(lib, []binding{
		{&d.cuInit, []string{"cuInit"}},
		{&d.cuDeviceGetCount, []string{"cuDeviceGetCount"}},
		{&d.cuDeviceGet, []string{"cuDeviceGet"}},
		{&d.cuDeviceGetName, []string{"cuDeviceGetName"}},
		{&d.cuDeviceGetAttribute, []string{"cuDeviceGetAttribute"}},
		{&d.cuCtxCreate, []string{"cuCtxCreate_v2", "cuCtxCreate"}},
		{&d.cuCtxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&d.cuCtxSynchronize, []string{"cuCtxSynchronize"}},
		{&d.cuModuleLoadData, []string{"cuModuleLoadData"}},
		{&d.cuModuleGetFunction, []string{"cuModuleGetFunction"}},
		{&d.cuMemAlloc, []string{"cuMemAlloc_v2"}},
		{&d.cuMemGetInfo, []string{"cuMemGetInfo_v2"}},
		{&d.cuMemFree, []string{"cuMemFree_v2"}},
		{&d.cuMemcpyHtoD, []string{"cuMemcpyHtoD_v2"}},
		{&d.cuMemcpyDtoH, []string{"cuMemcpyDtoH_v2"}},
		{&d.cuMemcpyDtoD, []string{"cuMemcpyDtoD_v2"}},
		{&d.cuMemsetD32, []string{"cuMemsetD32_v2"}},
		{&d.cuLaunchKernel, []string{"cuLaunchKernel"}},
		{&d.cuGetErrorString, []string{"cuGetErrorString"}},
	})
	if missing != "" {
		return nil, fmt.Errorf("%w: %s lacks %s", ErrNoDevice, path, missing)
	}
	if _, err := purego.Dlsym(lib, "corl_emu_error_detail"); err == nil {
		purego.RegisterLibFunc(&d.detail, lib, "corl_emu_error_detail")
	}
	if rc := d.cuInit(0); rc != 0 {
		return nil, fmt.Errorf("%w: cuInit: %s", ErrNoDevice, d.errString(rc))
	}
	return d, nil
}

// emulated reports whether this is corl's emulated driver.
func (d *driver) emulated() bool { return d.detail != nil }

// why is the emulated driver's explanation of its last error, as
// " (explanation)", or "" (a real driver gives none).
func (d *driver) why() string {
	if d.detail == nil {
		return ""
	}
	if w := goString(d.detail()); w != "" {
		return " (" + w + ")"
	}
	return ""
}

// errString names a CUresult, with the emulated driver's explanation.
func (d *driver) errString(rc int32) string {
	msg := fmt.Sprintf("CUDA error %d", rc)
	var s *byte
	if d.cuGetErrorString(rc, &s) == 0 && s != nil {
		msg = goString(s)
	}
	return msg + d.why()
}

// EmulatorPath is the emulated driver for tests: $CORL_CUDA_EMU, else where
// `make cuda-emu` builds it below the repository root root.
func EmulatorPath(root string) string {
	if p := os.Getenv("CORL_CUDA_EMU"); p != "" {
		return p
	}
	return filepath.Join(root, ".tools", "cudaemu", "libcudaemu.so")
}

// TB is the part of testing.TB that Emulator uses, so that this package
// need not import testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Emulator is the absolute path of the emulated driver for a test below the
// repository root root. Without it the test skips, saying how to build it,
// except under CI (CI=true), where `make test` builds it first and its
// absence is a failure.
func Emulator(t TB, root string) string {
	t.Helper()
	abs, err := filepath.Abs(EmulatorPath(root))
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the emulated CUDA driver is missing (%v): `make test` builds it with `make cuda-emu`", err)
		}
		t.Skipf("emulated CUDA driver not built (%v): run `make cuda-emu`, or `make test`", err)
	}
	return abs
}

// driverPath is the library New opens: $CORL_CUDA_DRIVER, else libcuda.so.1.
func driverPath() string {
	if p := os.Getenv("CORL_CUDA_DRIVER"); p != "" {
		return p
	}
	return DefaultDriver
}

func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for ptr := unsafe.Pointer(p); *(*byte)(ptr) != 0; ptr = unsafe.Add(ptr, 1) {
		b = append(b, *(*byte)(ptr))
	}
	return string(b)
}

func cstr(s string) *byte {
	b := append([]byte(s), 0)
	return &b[0]
}

// check panics on a driver error inside an op (programmer error or a dead
// device); Sync reports asynchronous errors as values.
func (be *Backend) check(rc int32, what string) {
	if rc != 0 {
		panic(fmt.Sprintf("gpu: cuda %s: %s", what, be.d.errString(rc)))
	}
}

// bind makes the backend's context current on the calling goroutine's OS
// thread, which stays locked to it until the returned function runs: a
// driver keeps the current context per OS thread, and Go moves goroutines
// between threads, so every driver call is made under bind.
func (be *Backend) bind() func() {
	runtime.LockOSThread()
	if rc := be.d.cuCtxSetCurrent(be.ctx); rc != 0 {
		runtime.UnlockOSThread()
		panic(fmt.Sprintf("gpu: cuda set context: %s", be.d.errString(rc)))
	}
	return runtime.UnlockOSThread
}

// launch runs kernel f on grid x block with the given arguments (each a
// uint64-sized value: a device pointer, an int32 widened, or a float32's
// bits). The argument array is pinned for the call and ends in a null entry
// (a driver reads as many as the kernel takes; the emulated driver checks
// the count against it).
func (be *Backend) launch(f uintptr, grid, block [3]uint32, shmem uint32, args ...uint64) {
	vals := make([]uint64, len(args))
	copy(vals, args)
	ptrs := make([]unsafe.Pointer, len(vals)+1)
	var pin runtime.Pinner
	defer pin.Unpin()
	for i := range vals {
		pin.Pin(&vals[i])
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	pin.Pin(&ptrs[0])
	defer be.bind()()
	be.check(be.d.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, 0, unsafe.Pointer(&ptrs[0]), nil), "launch")
}
