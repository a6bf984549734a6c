// add.cu — seed 004's first CUDA program: one thread adds two 1M-element arrays in managed memory.
// The profiler shows one very long kernel (one thread does all the work) and unified-memory
// page migrations instead of explicit memcpys.  Usage: add [N]
#include "common.h"

__global__ void add(int n, float *x, float *y) {
  for (int i = 0; i < n; i++) y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 20);
  float *x, *y;
  CUDA_CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  for (int i = 0; i < n; i++) {
    x[i] = 1.0f;
    y[i] = 2.0f;
  }
  add<<<1, 1>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(y[i] - 3.0f));
  int rc = report_max_error("add", max_error, 0.0f);
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return rc;
}
