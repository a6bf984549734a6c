// add_grid.cu — step 3: many blocks, one element per thread, explicit device memory.
// nsys now shows Host-to-Device and Device-to-Host memcpys (cudaMemcpy) whose time dwarfs the
// kernel's: the lesson of the memcpy reports.  Usage: add_grid [N] [BLOCK]
#include <vector>
#include "common.h"

__global__ void add(int n, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 24);
  int block = (int)arg_or(argc, argv, 2, 256);
  size_t bytes = (size_t)n * sizeof(float);
  std::vector<float> hx(n, 1.0f), hy(n, 2.0f);
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(y, hy.data(), bytes, cudaMemcpyHostToDevice));
  int grid = (n + block - 1) / block;
  add<<<grid, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(hy[i] - 3.0f));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("add_grid", max_error, 0.0f);
}
