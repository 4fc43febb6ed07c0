// Shared helpers of corl's CUDA kernels. Reductions are fixed binary trees
// over a fixed block size, so results never depend on scheduling.
#pragma once

#define THREADS 256

// block_sum returns the sum of v over the block (THREADS threads) to every
// thread; buf has THREADS entries of shared memory.
template <typename T>
__device__ T block_sum(T v, T* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();
    return r;
}

// block_max is block_sum with max.
__device__ inline float block_max(float v, float* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads();
    return r;
}
