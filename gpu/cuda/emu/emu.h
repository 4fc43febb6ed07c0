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
};

// cur points at the running fiber's variables.
extern thread_local ThreadVars* cur;

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
