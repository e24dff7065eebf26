// Harness utility kernels (not under test). Every entry point here is named
// `flush_*` so the spill gate in tests/nvrtc/nvrtc_compile.rs treats them as cold.
//
// flush_l2: evicts the L2 before a cold rep by streaming `words16` 16-byte
// stores over a buffer far larger than the L2 (default 512 MiB vs 50–60 MiB on
// an H100 / H200). Stores allocate in L2 on Hopper, so after this kernel the L2 holds
// flush-buffer lines only and the arm's inputs must come from HBM. `salt`
// changes the stored pattern every rep so no layer can treat the write as a
// no-op.
extern "C" __global__ void flush_l2(uint4* __restrict__ buffer,
                                    unsigned long long words16,
                                    unsigned int salt) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < words16; i += stride) {
        unsigned int v = salt ^ (unsigned int)i;
        buffer[i] = make_uint4(v, v + 1u, v + 2u, v + 3u);
    }
}

// flush_noop_probe: an empty kernel; the self-check times it to show the
// floor each timing method reports (launch latency is not kernel time).
extern "C" __global__ void flush_noop_probe() {}

// flush_spin: one thread busy-waits for `cycles` SM clocks. The event timer
// enqueues it ahead of a warm rep so the GPU is still busy when the arm's
// launches arrive: the start event then fires when the spin ends, not when
// the host happens to call, and host launch overhead stays outside the window.
extern "C" __global__ void flush_spin(unsigned long long cycles) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    long long start = clock64();
    while ((unsigned long long)(clock64() - start) < cycles) {
    }
}

// flush_slowdown_read: a deliberately wasted pass over the arm's input, used
// only to prove that the nightly regression gate catches a slower kernel
// (the slowdown diagnostic makes the `ss` arm launch it before its own kernel; the
// timer counts it like any kernel of the arm). It reads `words16` 16-byte words
// and writes `sink` only for an impossible XOR pattern, so the loads stay.
extern "C" __global__ void flush_slowdown_read(const uint4* __restrict__ data,
                                               unsigned long long words16,
                                               uint4* __restrict__ sink) {
    uint4 acc = make_uint4(0u, 0u, 0u, 0u);
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < words16; i += stride) {
        uint4 v = data[i];
        acc.x ^= v.x;
        acc.y ^= v.y;
        acc.z ^= v.z;
        acc.w ^= v.w;
    }
    if (acc.x == 0x9E3779B9u && acc.y == 0x7F4A7C15u && acc.z == 0x2545F491u &&
        acc.w == 0x4F6CDD1Du) {
        sink[0] = acc;
    }
}

// flush_read_bw: the device read-bandwidth probe of `gvr-bench gpu info` and
// every GPU run's manifest (src/timing/bandwidth.rs). Streams `words16` 16-byte
// words (a buffer far larger than the L2, read once per launch after an L2
// flush) with four independent loads in flight per thread per iteration, so
// HBM, not latency, bounds it. Writes `sink` only for an impossible XOR
// pattern, so the loads stay.
extern "C" __global__ void flush_read_bw(const uint4* __restrict__ data,
                                         unsigned long long words16,
                                         uint4* __restrict__ sink) {
    uint4 acc = make_uint4(0u, 0u, 0u, 0u);
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < words16; i += 4 * stride) {
        uint4 a = data[i];
        uint4 b = data[i + stride];
        uint4 c = data[i + 2 * stride];
        uint4 d = data[i + 3 * stride];
        acc.x ^= a.x ^ b.x ^ c.x ^ d.x;
        acc.y ^= a.y ^ b.y ^ c.y ^ d.y;
        acc.z ^= a.z ^ b.z ^ c.z ^ d.z;
        acc.w ^= a.w ^ b.w ^ c.w ^ d.w;
    }
    for (; i < words16; i += stride) {
        uint4 v = data[i];
        acc.x ^= v.x;
        acc.y ^= v.y;
        acc.z ^= v.z;
        acc.w ^= v.w;
    }
    if (acc.x == 0x9E3779B9u && acc.y == 0x7F4A7C15u && acc.z == 0x2545F491u &&
        acc.w == 0x4F6CDD1Du) {
        sink[0] = acc;
    }
}
