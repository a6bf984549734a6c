// add_prefetch.cu — step 6b: the same managed-memory kernel WITH cudaMemPrefetchAsync before the
// launch: the migration becomes a few large transfers and the kernel runs at device-memory speed.
// Usage: add_prefetch [N] [BLOCK]
#include "common.h"

__global__ void add(int n, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 24);
  int block = (int)arg_or(argc, argv, 2, 256);
  size_t bytes = (size_t)n * sizeof(float);
  float *x, *y;
  CUDA_CHECK(cudaMallocManaged(&x, bytes));
  CUDA_CHECK(cudaMallocManaged(&y, bytes));
  for (int i = 0; i < n; i++) {
    x[i] = 1.0f;
    y[i] = 2.0f;
  }
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  prefetch_to_device(x, bytes, device, 0);
  prefetch_to_device(y, bytes, device, 0);
  add<<<4 * sms, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(y[i] - 3.0f));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("add_prefetch", max_error, 0.0f);
}
