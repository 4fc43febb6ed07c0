// The CUDA execution model for host builds of corl's kernels. The emulated
// driver (driver.cpp) compiles gpu/cuda/kernels/all.cu with the system C++
// compiler after this header, so the very sources nvcc turns into the shipped
// PTX run here:
//
//   - every thread of a block is a fiber of its own (its own stack, its own
//     registers), and the block's fibers run on one host thread, so
//     __syncthreads() is a real barrier: a fiber that reaches it waits until
//     every thread of the block has reached the same __syncthreads();
//   - __shared__ variables are static thread_local: one copy per host thread,
//     that is per running block, shared by the block's fibers;
//   - threadIdx, blockIdx, blockDim and gridDim read the running fiber's
//     (kept at the top of its stack);
//   - __global__ and __device__ are plain functions; the device math
//     functions are the C library's (so __expf is exact here where the GPU's
//     is an approximation: the conformance tolerances cover both).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "emu.h"

#define threadIdx (corlemu::vars()->threadIdx)
#define blockIdx (corlemu::vars()->blockIdx)
#define blockDim (corlemu::vars()->blockDim)
#define gridDim (corlemu::vars()->gridDim)

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __syncthreads() corlemu::syncthreads(__FILE__, __LINE__)

inline float __expf(float x) { return expf(x); }
inline unsigned __float_as_uint(float x) {
    unsigned u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}
inline float __logf(float x) { return logf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
using std::max;
using std::min;
