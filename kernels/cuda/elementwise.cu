// add, square and gelu (tanh): one read per input and one write per element, nothing else.
// Each thread moves 16 bytes per access (float4 for float32, 8 halves) when the pointers allow
// it, which is what PyTorch's vectorized_elementwise_kernel does; arithmetic is done in float.
#include <cstdint>

#include "common.cuh"

namespace nsighttk {
namespace {

template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

struct AddOp { __device__ float operator()(float a, float b) const { return a + b; } };
struct SquareOp { __device__ float operator()(float a) const { return a * a; } };
struct GeluTanhOp {
  __device__ float operator()(float x) const {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x)));
  }
};

constexpr int kThreads = 256;

template <typename T, int N, typename Op>
__global__ void unary_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, Op op) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t nvec = n / N;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    Vec<T, N> a = reinterpret_cast<const Vec<T, N>*>(x)[i];
#pragma unroll
    for (int j = 0; j < N; ++j) a.v[j] = from_f<T>(op(to_f(a.v[j])));
    reinterpret_cast<Vec<T, N>*>(y)[i] = a;
  }
  // the tail that does not fill a vector
  for (int64_t i = nvec * N + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = from_f<T>(op(to_f(x[i])));
}

template <typename T, int N, typename Op>
__global__ void binary_kernel(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, int64_t n, Op op) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t nvec = n / N;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    Vec<T, N> a = reinterpret_cast<const Vec<T, N>*>(x)[i];
    const Vec<T, N> b = reinterpret_cast<const Vec<T, N>*>(y)[i];
#pragma unroll
    for (int j = 0; j < N; ++j) a.v[j] = from_f<T>(op(to_f(a.v[j]), to_f(b.v[j])));
    reinterpret_cast<Vec<T, N>*>(z)[i] = a;
  }
  for (int64_t i = nvec * N + int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    z[i] = from_f<T>(op(to_f(x[i]), to_f(y[i])));
}

// One vector per thread when the grid allows it; the grid-stride loops cover the rest.
unsigned blocks_for(int64_t work) {
  const int64_t b = (work + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > 0x7fffffff ? 0x7fffffff : b));
}

template <typename Op>
cudaError_t launch_unary(const void* x, void* y, int64_t n, DType t, bool vectorize, cudaStream_t s, Op op) {
  if (n == 0) return cudaSuccess;
  return dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = 16 / sizeof(T);
    if (vectorize)
      unary_kernel<T, N><<<blocks_for(n / N + 1), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, op);
    else
      unary_kernel<T, 1><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, op);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t add(const void* x, const void* y, void* z, int64_t n, DType t, bool vectorize, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    constexpr int N = 16 / sizeof(T);
    auto px = static_cast<const T*>(x);
    auto py = static_cast<const T*>(y);
    auto pz = static_cast<T*>(z);
    if (vectorize)
      binary_kernel<T, N><<<blocks_for(n / N + 1), kThreads, 0, s>>>(px, py, pz, n, AddOp{});
    else
      binary_kernel<T, 1><<<blocks_for(n), kThreads, 0, s>>>(px, py, pz, n, AddOp{});
    return cudaGetLastError();
  });
}

cudaError_t square(const void* x, void* y, int64_t n, DType t, bool vectorize, cudaStream_t s) {
  return launch_unary(x, y, n, t, vectorize, s, SquareOp{});
}

cudaError_t gelu_tanh(const void* x, void* y, int64_t n, DType t, bool vectorize, cudaStream_t s) {
  return launch_unary(x, y, n, t, vectorize, s, GeluTanhOp{});
}

}  // namespace nsighttk
