// gelu.cu — seed 000's GELU, tanh approximation, fused into one kernel:
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// Checked against a double-precision reference on the host.  Usage: gelu [N] [BLOCK] [REPEATS]
#include <vector>
#include "common.h"

__global__ void gelu_tanh(int n, const float *__restrict__ x, float *__restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
  }
}

int main(int argc, char **argv) {
  int n = (int)arg_or(argc, argv, 1, 1 << 24);
  int block = (int)arg_or(argc, argv, 2, 256);
  int repeats = (int)arg_or(argc, argv, 3, 3);
  size_t bytes = (size_t)n * sizeof(float);
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; i++) hx[i] = (float)((i * 2654435761u) % 2000001u) / 100000.0f - 10.0f;
  float *x, *y;
  CUDA_CHECK(cudaMalloc(&x, bytes));
  CUDA_CHECK(cudaMalloc(&y, bytes));
  CUDA_CHECK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(y, 0xff, bytes));
  int grid = (n + block - 1) / block;
  for (int r = 0; r < repeats; r++) gelu_tanh<<<grid, block>>>(n, x, y);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost));
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) {
    double v = hx[i];
    double ref = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    float e = (float)std::fabs(hy[i] - ref);
    max_error = (e != e) ? INFINITY : fmaxf(max_error, e);
  }
  CUDA_CHECK(cudaFree(x));
  CUDA_CHECK(cudaFree(y));
  return report_max_error("gelu", max_error, 1e-5f * 10.0f);
}
