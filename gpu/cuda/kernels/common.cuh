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

// to_f16 rounds x to IEEE binary16 (nearest, ties to even; overflow to
// infinity; NaN kept, quieted), as internal/narrow.F16: integer
// arithmetic only, so the host build and the device agree bit for bit.
__device__ inline unsigned short to_f16(float x) {
    unsigned b = __float_as_uint(x);
    unsigned short sign = (unsigned short)((b >> 16) & 0x8000u);
    int exp = (int)((b >> 23) & 0xffu);
    unsigned man = b & 0x7fffffu;
    if (exp == 0xff) return man == 0 ? (unsigned short)(sign | 0x7c00u) : (unsigned short)(sign | 0x7e00u | (man >> 13));
    int e = exp - 127 + 15;
    if (e >= 1) {
        unsigned h = ((unsigned)e << 10) | (man >> 13);
        unsigned rem = man & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        if (h >= 0x7c00u) return (unsigned short)(sign | 0x7c00u);
        return (unsigned short)(sign | h);
    }
    if (exp == 0) return sign;
    unsigned shift = (unsigned)(14 - e);
    if (shift > 24) return sign;
    unsigned m = man | 0x800000u;
    unsigned h = m >> shift;
    unsigned half = 1u << (shift - 1);
    unsigned rem = m & ((half << 1) - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (unsigned short)(sign | h);
}

// from_f16 widens a binary16 value exactly.
__device__ inline float from_f16(unsigned short x) {
    unsigned sign = ((unsigned)x & 0x8000u) << 16;
    unsigned exp = ((unsigned)x >> 10) & 0x1fu, man = (unsigned)x & 0x3ffu;
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp != 0) return __uint_as_float(sign | ((exp - 15 + 127) << 23) | (man << 13));
    if (man == 0) return __uint_as_float(sign);
    // Subnormal: man x 2^-24, exact in float32.
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
}
