// sync_pitfalls.cu — the host-side mistakes Nsight Systems' expert rules (`nsys analyze`) look for,
// each made on purpose, so that `nsighttk rules` and `nsys analyze` have something to find:
//   cuda_memcpy_async  cudaMemcpyAsync from pageable memory (the copy is not asynchronous)
//   cuda_memcpy_sync   cudaMemcpy device-to-host (the host waits for the copy)
//   cuda_memset_sync   cudaMemset on managed memory (synchronous with the host)
//   cuda_api_sync      cudaDeviceSynchronize / cudaStreamSynchronize after every launch
//   gpu_gaps           the GPU idle for 600 ms while the host "prepares the next batch"
//   gpu_time_util      most of the timeline with the GPU under-used
// The fixes are the other samples: pinned buffers, cudaMemcpyAsync/cudaMemsetAsync on a stream,
// one synchronisation at the end.  Usage: sync_pitfalls [N] [ROUNDS]
#include <chrono>
#include <thread>
#include <vector>
#include "common.h"

__global__ void scale_add(int n, float a, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 22);
  int rounds = (int)arg_or(argc, argv, 2, 4);
  size_t bytes = (size_t)n * sizeof(float);
  std::vector<float> hx(n, 1.0f), hy(n, 0.0f);  // pageable host memory
  float *x, *y, *managed;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMallocManaged(&managed, bytes));
  cudaStream_t s;
  CUDA_CHECK(cudaStreamCreate(&s));
  CUDA_CHECK(cudaMemcpyAsync(x, hx.data(), bytes, cudaMemcpyHostToDevice, s));  // pageable: not async
  CUDA_CHECK(cudaMemset(managed, 0, bytes));                                     // managed: synchronous
  CUDA_CHECK(cudaMemsetAsync(y, 0, bytes, s));
  int block = 256, grid = 264;
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < 8; k++) {
      scale_add<<<grid, block, 0, s>>>(n, 1.0f, x, y);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaStreamSynchronize(s));  // a synchronisation after every launch
    }
    scale_add<<<grid, block, 0, s>>>(n, 1.0f, x, managed);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the GPU waits for the host
  }
  CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));  // synchronous copy back
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(hy[i] - 8.0f * rounds));
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(managed[i] - 1.0f * rounds));
  CUDA_CHECK(cudaStreamDestroy(s));
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  CUDA_CHECK(cudaFree(managed));
  return report_max_error("sync_pitfalls", max_error, 0.0f);
}
