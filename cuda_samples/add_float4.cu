// add_float4.cu — step 5: vectorized loads and stores (16 bytes per thread per access), the
// pattern memory-bound kernels use to approach DRAM bandwidth.  A scalar tail handles N % 4.
// Usage: add_float4 [N] [BLOCK] [REPEATS]
#include <vector>
#include "common.h"

__global__ void add(int n, const float *x, float *y) {
  int n4 = n / 4;
  const float4 *x4 = reinterpret_cast<const float4 *>(x);
  float4 *y4 = reinterpret_cast<float4 *>(y);
  int stride = blockDim.x * gridDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 a = x4[i], b = y4[i];
    y4[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
  for (int i = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, (1 << 24) + 3);
  int block = (int)arg_or(argc, argv, 2, 256);
  int repeats = (int)arg_or(argc, argv, 3, 5);
  size_t bytes = (size_t)n * sizeof(float);
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  std::vector<float> hx(n), hy(n, 0.0f);
  for (int i = 0; i < n; i++) hx[i] = (float)(i % 7);
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(y, 0, bytes));
  for (int r = 0; r < repeats; r++) add<<<4 * sms, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(hy[i] - repeats * hx[i]));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("add_float4", max_error, 0.0f);
}
