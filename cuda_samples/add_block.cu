// add_block.cu — step 2: one block of threads, each thread strides by blockDim.x.
// Compared with add.cu the kernel time drops by roughly the block size.  Usage: add_block [N] [BLOCK]
#include "common.h"

__global__ void add(int n, float *x, float *y) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 20);
  int block = (int)arg_or(argc, argv, 2, 256);
  float *x, *y;
  CUDA_CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  for (int i = 0; i < n; i++) {
    x[i] = 1.0f;
    y[i] = 2.0f;
  }
  add<<<1, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(y[i] - 3.0f));
  int rc = report_max_error("add_block", max_error, 0.0f);
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return rc;
}
