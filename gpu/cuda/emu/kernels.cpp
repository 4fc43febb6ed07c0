// The kernels: gpu/cuda/kernels/all.cu, the translation unit nvcc compiles
// to the shipped PTX, built for the host under cuda_emu.h's execution model.
// kernels.inc (written by `make cuda-emu` from the sources' __global__
// definitions) names each one for the registry.
#include "cuda_emu.h"
#include "emu.h"

#include "../kernels/all.cu"
#include "faults.cu"

namespace corlemu {
const KernelInfo kKernels[] = {
#include "kernels.inc"
};
const int kNumKernels = sizeof(kKernels) / sizeof(kKernels[0]);
}  // namespace corlemu
