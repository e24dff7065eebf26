// values.cu — the optional values output of the self-sampling top-K:
// values[r, j] = logits[r, idx[r, j]], and -FLT_MAX where
// the index is -1 (short and zero-window rows). A separate launch on the same
// stream, after the top-K kernel: the selection kernels never carry values
// through their emit paths, so this costs rows·k gathers only when asked for.
// Capture-safe (no host reads); an index outside [0, npad) — which no ss
// kernel writes — reads nothing and yields -FLT_MAX.

#include "prim/common.cuh"

extern "C" __global__ void __launch_bounds__(256) ss_gather_values(const float* __restrict__ logits,
                                                                   const i32* __restrict__ indices,
                                                                   float* __restrict__ values, u32 rows, u32 npad,
                                                                   u32 k) {
    const u64 total = (u64)rows * k;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 row = i / k;
        const u32 idx = (u32)indices[i];
        values[i] = idx < npad ? logits[row * npad + idx] : -3.402823466e38f;
    }
}
