// Internal declarations shared by the emulated driver's translation units.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
};

namespace corlemu {

// The built-in variables of the running CUDA thread.
struct ThreadVars {
    uint3 threadIdx, blockIdx;
    dim3 blockDim, gridDim;
    void* worker;  // the emulator's host thread running the block
};

// Each fiber's stack is a kFiberRegion-aligned region, an inaccessible guard
// page at its bottom, the thread's ThreadVars near its top (the stack grows
// down from just below them). So the running thread's variables are found
// from its stack pointer, without thread-local storage (which a shared
// library reaches through a call). The vars sit 64 bytes further down in
// each successive region, so that the fibers' hot lines (vars and stack
// top) fall into different cache sets rather than all into one.
constexpr unsigned kFiberRegionShift = 17;
constexpr unsigned long kFiberRegion = 1ul << kFiberRegionShift;

inline ThreadVars* varsBelow(unsigned long top) {
    return (ThreadVars*)(top - 64 - (((top >> kFiberRegionShift) * 64) & 0xffff));
}

inline ThreadVars* vars() {
    unsigned long sp;
    asm("mov %%rsp, %0" : "=r"(sp));
    return varsBelow((sp | (kFiberRegion - 1)) + 1);
}

// syncthreads parks the running fiber at the barrier named by file:line.
void syncthreads(const char* file, int line);

// KernelInfo is one host-built kernel: its name, a trampoline that calls it
// with a cuLaunchKernel parameter array, and its parameters' sizes.
struct KernelInfo {
    const char* name;
    void (*invoke)(void** params);
    int nparams;
    const size_t* sizes;
};

template <typename T>
struct Sig;

template <typename... A>
struct Sig<void (*)(A...)> {
    template <auto F, size_t... I>
    static void call(void** p, std::index_sequence<I...>) {
        F(*static_cast<A*>(p[I])...);
    }
    template <auto F>
    static void invoke(void** p) {
        call<F>(p, std::index_sequence_for<A...>{});
    }
    static constexpr int n = sizeof...(A);
    static inline const size_t sizes[sizeof...(A) + 1] = {sizeof(A)..., 0};
};

// kKernels lists every kernel of kernels/*.cu (kernels.cpp), kNumKernels long.
extern const KernelInfo kKernels[];
extern const int kNumKernels;

}  // namespace corlemu

#define CORLEMU_KERNEL(name) \
    {#name, &corlemu::Sig<decltype(&name)>::invoke<&name>, corlemu::Sig<decltype(&name)>::n, corlemu::Sig<decltype(&name)>::sizes},
