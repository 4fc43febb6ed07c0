#include "common.cuh"

// out (N, C) = wte[ids] (+ wpe[pos] when wpe is non-null); one block per row.
extern "C" __global__ void embedding_forward(float* out, const float* wte, const float* wpe,
                                             const int* ids, const int* pos, int N, int C) {
    long i = blockIdx.x;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float v = wte[(long)ids[i] * C + c];
        if (wpe) v += wpe[(long)pos[i] * C + c];
        out[i * C + c] = v;
    }
}

// dtable[keys[g]] += sum of dout rows order[starts[g] .. starts[g+1]), in that
// order: the host groups the tokens by id, so no two blocks write one row and
// no atomics are needed. One block per group.
extern "C" __global__ void embedding_backward(float* dtable, const float* dout, const int* order,
                                              const int* starts, const int* keys, int C) {
    int g = blockIdx.x;
    long row = (long)keys[g] * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float acc = dtable[row + c];
        for (int j = starts[g]; j < starts[g + 1]; j++) acc += dout[(long)order[j] * C + c];
        dtable[row + c] = acc;
    }
}
