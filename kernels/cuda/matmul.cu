// C = A @ B with 32x32 shared-memory tiles (the CUDA guide's classic kernel, with each thread
// computing 4 outputs to reuse what it loads): a teaching baseline against cuBLAS and Triton,
// which use tensor cores.  Accumulates in float for every storage type.
#include "common.cuh"

namespace nsighttk {
namespace {

constexpr int kTile = 32;
constexpr int kRows = 8;  // threads per block: 32 x 8, each computes kTile / kRows outputs

template <typename T>
__global__ void matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * kTile, col = blockIdx.x * kTile + tx;
  float acc[kTile / kRows] = {};
  for (int k0 = 0; k0 < K; k0 += kTile) {
    for (int r = ty; r < kTile; r += kRows) {
      const int ar = row0 + r, ak = k0 + tx, bk = k0 + r;
      as[r][tx] = (ar < M && ak < K) ? to_f(a[int64_t(ar) * K + ak]) : 0.f;
      bs[r][tx] = (bk < K && col < N) ? to_f(b[int64_t(bk) * N + col]) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < kTile; ++k) {
      const float bv = bs[k][tx];
#pragma unroll
      for (int i = 0; i < kTile / kRows; ++i) acc[i] += as[ty + i * kRows][k] * bv;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTile / kRows; ++i) {
    const int r = row0 + ty + i * kRows;
    if (r < M && col < N) c[int64_t(r) * N + col] = from_f<T>(acc[i]);
  }
}

}  // namespace

cudaError_t matmul_tiled(const void* a, const void* b, void* c, int M, int N, int K, DType t, cudaStream_t s) {
  if (M == 0 || N == 0) return cudaSuccess;
  return dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile), block(kTile, kRows);
    matmul_kernel<T><<<grid, block, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), M, N, K);
    return cudaGetLastError();
  });
}

}  // namespace nsighttk
