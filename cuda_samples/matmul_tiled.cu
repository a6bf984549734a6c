// matmul_tiled.cu — C = A B in fp32 with shared-memory tiles and a 4x4 register tile per thread.
// Each 256-thread block stages a 64x64 tile of A and of B in dynamic shared memory (32 KiB) and
// keeps 16 accumulators per thread in registers, so its occupancy is limited by registers or
// shared memory, not by warps: the counter-example to the add kernels.  Usage: matmul_tiled [N]
#include <vector>
#include "common.h"

constexpr int TILE = 64, SUB = 4, THREADS = (TILE / SUB) * (TILE / SUB);

__global__ void matmul_tiled(int n, const float *A, const float *B, float *C) {
  extern __shared__ float smem[];
  float *As = smem, *Bs = smem + TILE * TILE;
  int tx = threadIdx.x % (TILE / SUB), ty = threadIdx.x / (TILE / SUB);
  int row0 = blockIdx.y * TILE + ty * SUB, col0 = blockIdx.x * TILE + tx * SUB;
  float acc[SUB][SUB] = {};
  for (int k0 = 0; k0 < n; k0 += TILE) {
    for (int t = threadIdx.x; t < TILE * TILE; t += THREADS) {
      int r = t / TILE, c = t % TILE;
      int ar = blockIdx.y * TILE + r, ac = k0 + c, br = k0 + r, bc = blockIdx.x * TILE + c;
      As[t] = (ar < n && ac < n) ? A[(size_t)ar * n + ac] : 0.0f;
      Bs[t] = (br < n && bc < n) ? B[(size_t)br * n + bc] : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < TILE; k++) {
      float a[SUB], b[SUB];
#pragma unroll
      for (int i = 0; i < SUB; i++) a[i] = As[(ty * SUB + i) * TILE + k];
#pragma unroll
      for (int j = 0; j < SUB; j++) b[j] = Bs[k * TILE + tx * SUB + j];
#pragma unroll
      for (int i = 0; i < SUB; i++)
#pragma unroll
        for (int j = 0; j < SUB; j++) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < SUB; i++)
#pragma unroll
    for (int j = 0; j < SUB; j++)
      if (row0 + i < n && col0 + j < n) C[(size_t)(row0 + i) * n + col0 + j] = acc[i][j];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1024);
  size_t elems = (size_t)n * n, bytes = elems * sizeof(float);
  std::vector<float> ha(elems), hb(elems), hc(elems);
  for (size_t i = 0; i < elems; i++) {
    ha[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    hb[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
  }
  float *a, *b, *c;
  CUDA_CHECK(cudaMalloc(&a, bytes));
  CUDA_CHECK(cudaMalloc(&b, bytes));
  CUDA_CHECK(cudaMalloc(&c, bytes));
  CUDA_CHECK(cudaMemcpy(a, ha.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(b, hb.data(), bytes, cudaMemcpyHostToDevice));
  size_t smem = 2 * TILE * TILE * sizeof(float);
  CUDA_CHECK(cudaFuncSetAttribute(matmul_tiled, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
  matmul_tiled<<<grid, THREADS, smem>>>(n, a, b, c);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(hc.data(), c, bytes, cudaMemcpyDeviceToHost));
  // Check a sample of rows against a double-precision reference.
  float max_error = 0.0f;
  for (int r = 0; r < n; r += 97)
    for (int col = 0; col < n; col++) {
      double ref = 0.0;
      for (int k = 0; k < n; k++) ref += (double)ha[(size_t)r * n + k] * hb[(size_t)k * n + col];
      float e = (float)std::fabs(hc[(size_t)r * n + col] - ref);
      max_error = (e != e) ? INFINITY : fmaxf(max_error, e);
    }
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  return report_max_error("matmul_tiled", max_error, 1e-3f);
}
