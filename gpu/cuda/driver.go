package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoDevice is returned (wrapped) by New when no CUDA driver or device is
// present; callers fall back to, or stay on, the CPU backend.
var ErrNoDevice = errors.New("no CUDA device")

// The CUDA driver API functions corl uses, bound at run time from
// libcuda.so.1 (no cgo, no toolkit needed to build).
var drv struct {
	once sync.Once
	err  error

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

// loadDriver opens libcuda.so.1 once and binds the functions.
func loadDriver() error {
	drv.once.Do(func() {
		// dlerror's text is per thread: read it on the thread that failed.
		runtime.LockOSThread()
		lib, err := purego.Dlopen("libcuda.so.1", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		runtime.UnlockOSThread()
		if err != nil {
			why := err.Error()
			if why == "" {
				why = "the dynamic loader gave no reason: is the NVIDIA driver installed?"
			}
			drv.err = fmt.Errorf("%w: cannot open libcuda.so.1 (%s)", ErrNoDevice, why)
			return
		}
		bind := func(fn any, names ...string) {
			for _, n := range names {
				if _, err := purego.Dlsym(lib, n); err == nil {
					purego.RegisterLibFunc(fn, lib, n)
					return
				}
			}
			if drv.err == nil {
				drv.err = fmt.Errorf("%w: libcuda.so.1 lacks %s", ErrNoDevice, names[0])
			}
		}
		bind(&drv.cuInit, "cuInit")
		bind(&drv.cuDeviceGetCount, "cuDeviceGetCount")
		bind(&drv.cuDeviceGet, "cuDeviceGet")
		bind(&drv.cuDeviceGetName, "cuDeviceGetName")
		bind(&drv.cuDeviceGetAttribute, "cuDeviceGetAttribute")
		bind(&drv.cuCtxCreate, "cuCtxCreate_v2", "cuCtxCreate")
		bind(&drv.cuCtxSetCurrent, "cuCtxSetCurrent")
		bind(&drv.cuCtxSynchronize, "cuCtxSynchronize")
		bind(&drv.cuModuleLoadData, "cuModuleLoadData")
		bind(&drv.cuModuleGetFunction, "cuModuleGetFunction")
		bind(&drv.cuMemAlloc, "cuMemAlloc_v2")
		bind(&drv.cuMemFree, "cuMemFree_v2")
		bind(&drv.cuMemcpyHtoD, "cuMemcpyHtoD_v2")
		bind(&drv.cuMemcpyDtoH, "cuMemcpyDtoH_v2")
		bind(&drv.cuMemcpyDtoD, "cuMemcpyDtoD_v2")
		bind(&drv.cuMemsetD32, "cuMemsetD32_v2")
		bind(&drv.cuLaunchKernel, "cuLaunchKernel")
		bind(&drv.cuGetErrorString, "cuGetErrorString")
		if drv.err != nil {
			return
		}
		if rc := drv.cuInit(0); rc != 0 {
			drv.err = fmt.Errorf("%w: cuInit: %s", ErrNoDevice, errString(rc))
		}
	})
	return drv.err
}

// errString names a CUresult.
func errString(rc int32) string {
	var s *byte
	if drv.cuGetErrorString != nil && drv.cuGetErrorString(rc, &s) == 0 && s != nil {
		return goString(s)
	}
	return fmt.Sprintf("CUDA error %d", rc)
}

func goString(p *byte) string {
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
func check(rc int32, what string) {
	if rc != 0 {
		panic(fmt.Sprintf("gpu: cuda %s: %s", what, errString(rc)))
	}
}

// launch runs kernel f on grid x block with the given arguments (each a
// uint64-sized value: a device pointer, an int32 widened, or a float32's
// bits). The argument array is pinned for the call.
func launch(f uintptr, grid, block [3]uint32, shmem uint32, args ...uint64) {
	vals := make([]uint64, len(args))
	copy(vals, args)
	ptrs := make([]unsafe.Pointer, len(vals))
	var pin runtime.Pinner
	defer pin.Unpin()
	for i := range vals {
		pin.Pin(&vals[i])
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	var p unsafe.Pointer
	if len(ptrs) > 0 {
		pin.Pin(&ptrs[0])
		p = unsafe.Pointer(&ptrs[0])
	}
	check(drv.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shmem, 0, p, nil), "launch")
}
