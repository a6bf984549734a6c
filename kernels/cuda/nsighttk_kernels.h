// Launchers for the CUDA variants of nsighttk's built-in workloads (kernels/*.py).
//
// The kernels (*.cu) know nothing about PyTorch: they take raw pointers, sizes, a dtype code and
// the stream to launch on, so nvcc compiles them alone (CI checks sm_80 and sm_90) and any host
// code can call them.  bindings.cpp adapts them to torch tensors (torch.utils.cpp_extension).
#pragma once
#include <cstdint>
#include <cuda_runtime_api.h>

namespace nsighttk {

enum class DType : int { f32 = 0, f16 = 1, bf16 = 2 };

// Elementwise, n elements each.  `vectorize`: pointers are 16-byte aligned (128-bit accesses).
cudaError_t add(const void* x, const void* y, void* z, int64_t n, DType t, bool vectorize, cudaStream_t s);
cudaError_t square(const void* x, void* y, int64_t n, DType t, bool vectorize, cudaStream_t s);
cudaError_t gelu_tanh(const void* x, void* y, int64_t n, DType t, bool vectorize, cudaStream_t s);

// Row-wise softmax of a contiguous rows x cols matrix; one block per row, x read once from DRAM.
cudaError_t softmax_rows(const void* x, void* y, int64_t rows, int64_t cols, DType t, cudaStream_t s);

// C[M,N] = A[M,K] @ B[K,N], row-major, float accumulation, shared-memory tiles.
cudaError_t matmul_tiled(const void* a, const void* b, void* c, int M, int N, int K, DType t, cudaStream_t s);

// D[M,N] = ||X[m] - Y[n]||_2 for X[M,D], Y[N,D] row-major (torch.cdist, p=2), shared-memory tiles.
cudaError_t cdist_tiled(const void* x, const void* y, void* d, int M, int N, int D, DType t, cudaStream_t s);

}  // namespace nsighttk
