// Kernels with deliberate faults, built into the emulated driver only (never
// into the shipped PTX): the emulator's tests launch them to show that it
// refuses what would hang, or quietly go wrong, on a GPU.
#include "../kernels/common.cuh"

// Threads n and up leave before the barrier the others wait at.
extern "C" __global__ void emu_exit_before_barrier(float* out, int n) {
    if (threadIdx.x >= n) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}

// Odd and even threads wait at two different barriers.
extern "C" __global__ void emu_split_barrier(float* out) {
    if (threadIdx.x % 2) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 2.0f;
}

// out[b] = the sum of in's block b, through common.cuh's block_sum (a kernel
// without faults, for the scheduling orders).
extern "C" __global__ void emu_block_sum(float* out, const float* in) {
    __shared__ float buf[THREADS];
    float s = block_sum(in[blockIdx.x * THREADS + threadIdx.x], buf);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// Integer division by d (0: a fault on the host, where a GPU returns junk).
extern "C" __global__ void emu_divide(int* out, int d) { out[threadIdx.x] = (int)threadIdx.x / d; }

__device__ int deep(int n) {
    volatile char pad[1024];
    pad[0] = (char)n;
    return n > 0 ? deep(n - 1) + pad[0] : 0;
}

// Recursion n deep, about 1 KiB of stack a level.
extern "C" __global__ void emu_deep_stack(int* out, int n) { out[threadIdx.x] = deep(n); }
