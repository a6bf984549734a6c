// square.cu — seed 001's square as a standalone program: y = x * x, one element per thread.
// Usage: square [N] [BLOCK] [REPEATS]
#include <vector>
#include "common.h"

__global__ void square(int n, const float *__restrict__ x, float *__restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 24);
  int block = (int)arg_or(argc, argv, 2, 256);
  int repeats = (int)arg_or(argc, argv, 3, 3);
  size_t bytes = (size_t)n * sizeof(float);
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; i++) hx[i] = (float)(i % 1024) / 64.0f - 8.0f;
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(y, 0xff, bytes));  // poison: unwritten elements become NaN
  int grid = (n + block - 1) / block;
  for (int r = 0; r < repeats; r++) square<<<grid, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) {
    float e = fabsf(hy[i] - hx[i] * hx[i]);
    max_error = (e != e) ? INFINITY : fmaxf(max_error, e);
  }
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("square", max_error, 0.0f);
}
