// add_managed.cu — step 6a: grid-stride kernel on managed memory WITHOUT prefetch.  The first
// touch on the GPU page-faults; nsys shows "Unified Host-to-Device" migrations and a slow first
// kernel.  Compare with add_prefetch.cu.  Usage: add_managed [N] [BLOCK]
#include "common.h"

__global__ void add(int n, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 24);  // 64 MiB per array: far below any GPU's memory
  int block = (int)arg_or(argc, argv, 2, 256);
  float *x, *y;
  CUDA_CHECK(cudaMallocManaged(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMallocManaged(&y, n * sizeof(float)));
  for (int i = 0; i < n; i++) {
    x[i] = 1.0f;
    y[i] = 2.0f;
  }
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  add<<<4 * sms, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(y[i] - 3.0f));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("add_managed", max_error, 0.0f);
}
