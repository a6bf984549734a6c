// Row-wise softmax, one block per row.  Pass 1 keeps a running max and a running sum of
// exp(x - max) per thread (the "online softmax" recurrence), merged across the block; pass 2
// reads the row again (from L2: a 4096-float row is 16 KiB) and writes exp(x - max) / sum.
// DRAM traffic is one read and one write per element, like the fused Triton kernel.
#include <cfloat>
#include <cstdint>

#include "common.cuh"

namespace nsighttk {
namespace {

constexpr int kThreads = 512;

struct MaxSum { float m, s; };

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

template <typename T>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  const T* row = x + int64_t(blockIdx.x) * cols;
  T* out = y + int64_t(blockIdx.x) * cols;
  MaxSum acc{-INFINITY, 0.f};
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc = merge(acc, {to_f(row[c]), 1.f});
  for (int off = 16; off > 0; off >>= 1) {
    MaxSum other{__shfl_xor_sync(0xffffffff, acc.m, off), __shfl_xor_sync(0xffffffff, acc.s, off)};
    acc = merge(acc, other);
  }
  __shared__ MaxSum warp_acc[kThreads / 32];
  __shared__ MaxSum total;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_acc[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    MaxSum t = warp_acc[0];
    for (int w = 1; w < int(blockDim.x / 32); ++w) t = merge(t, warp_acc[w]);
    total = t;
  }
  __syncthreads();
  const float m = total.m, inv = 1.f / total.s;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = from_f<T>(expf(to_f(row[c]) - m) * inv);
}

}  // namespace

cudaError_t softmax_rows(const void* x, void* y, int64_t rows, int64_t cols, DType t, cudaStream_t s) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;
  return dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    softmax_kernel<T><<<unsigned(rows), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), cols);
    return cudaGetLastError();
  });
}

}  // namespace nsighttk
