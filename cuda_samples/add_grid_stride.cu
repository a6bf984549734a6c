// add_grid_stride.cu — step 4: a grid-stride loop sized to the GPU (a few blocks per SM), so the
// same launch works for any N; the kernel is repeated so nsys shows several instances and a median.
// Usage: add_grid_stride [N] [BLOCK] [REPEATS]
#include <vector>
#include "common.h"

__global__ void add(int n, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 24);
  int block = (int)arg_or(argc, argv, 2, 256);
  int repeats = (int)arg_or(argc, argv, 3, 5);
  size_t bytes = (size_t)n * sizeof(float);
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  std::vector<float> hx(n, 1.0f), hy(n, 0.0f);
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(y, 0, bytes));
  int grid = 4 * sms;
  for (int r = 0; r < repeats; r++) add<<<grid, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(hy[i] - (float)repeats));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("add_grid_stride", max_error, 0.0f);
}
