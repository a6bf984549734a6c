// PyTorch bindings for the kernels in this folder (torch.utils.cpp_extension builds them:
// nsighttk/cuda_ext.py).  Each function checks its tensors, allocates the output and launches on
// the stream it is given (the Python wrapper passes torch.cuda.current_stream()), so the kernels
// appear in nsys/ncu/torch.profiler like any other op.  Only torch/extension.h is needed, so CI
// checks this file against the CPU wheel's headers.
#include <c10/core/DeviceGuard.h>
#include <torch/extension.h>

#include "nsighttk_kernels.h"

namespace {

nsighttk::DType dtype_of(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32: return nsighttk::DType::f32;
    case torch::kFloat16: return nsighttk::DType::f16;
    case torch::kBFloat16: return nsighttk::DType::bf16;
    default: TORCH_CHECK(false, "nsighttk CUDA kernels take float32, float16 or bfloat16, not ", t.scalar_type());
  }
}

void check(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
}

bool aligned16(std::initializer_list<const void*> ptrs) {
  for (auto p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

cudaStream_t stream(int64_t s) { return reinterpret_cast<cudaStream_t>(static_cast<intptr_t>(s)); }

void ok(cudaError_t e) { TORCH_CHECK(e == cudaSuccess, "kernel launch failed: ", cudaGetErrorString(e)); }

torch::Tensor add(const torch::Tensor& x, const torch::Tensor& y, int64_t s) {
  check(x, "x");
  check(y, "y");
  TORCH_CHECK(x.sizes() == y.sizes() && x.scalar_type() == y.scalar_type(), "x and y must have the same shape and dtype");
  const c10::DeviceGuard guard(x.device());
  auto z = torch::empty_like(x);
  ok(nsighttk::add(x.data_ptr(), y.data_ptr(), z.data_ptr(), x.numel(), dtype_of(x),
                   aligned16({x.data_ptr(), y.data_ptr(), z.data_ptr()}), stream(s)));
  return z;
}

template <cudaError_t (*Launch)(const void*, void*, int64_t, nsighttk::DType, bool, cudaStream_t)>
torch::Tensor unary(const torch::Tensor& x, int64_t s) {
  check(x, "x");
  const c10::DeviceGuard guard(x.device());
  auto y = torch::empty_like(x);
  ok(Launch(x.data_ptr(), y.data_ptr(), x.numel(), dtype_of(x), aligned16({x.data_ptr(), y.data_ptr()}),
            stream(s)));
  return y;
}

torch::Tensor softmax(const torch::Tensor& x, int64_t s) {
  check(x, "x");
  TORCH_CHECK(x.dim() >= 1, "softmax needs at least one dimension");
  const c10::DeviceGuard guard(x.device());
  auto y = torch::empty_like(x);
  const int64_t cols = x.size(-1);
  ok(nsighttk::softmax_rows(x.data_ptr(), y.data_ptr(), cols ? x.numel() / cols : 0, cols, dtype_of(x),
                            stream(s)));
  return y;
}

torch::Tensor matmul(const torch::Tensor& a, const torch::Tensor& b, int64_t s) {
  check(a, "a");
  check(b, "b");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul needs [M,K] @ [K,N]");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "a and b must have the same dtype");
  const c10::DeviceGuard guard(a.device());
  auto c = torch::empty({a.size(0), b.size(1)}, a.options());
  ok(nsighttk::matmul_tiled(a.data_ptr(), b.data_ptr(), c.data_ptr(), a.size(0), b.size(1), a.size(1), dtype_of(a),
                            stream(s)));
  return c;
}

torch::Tensor cdist(const torch::Tensor& x, const torch::Tensor& y, int64_t s) {
  check(x, "x");
  check(y, "y");
  TORCH_CHECK(x.dim() == 2 && y.dim() == 2 && x.size(1) == y.size(1), "cdist needs [M,D] and [N,D]");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "x and y must have the same dtype");
  const c10::DeviceGuard guard(x.device());
  auto d = torch::empty({x.size(0), y.size(0)}, x.options());
  ok(nsighttk::cdist_tiled(x.data_ptr(), y.data_ptr(), d.data_ptr(), x.size(0), y.size(0), x.size(1), dtype_of(x),
                           stream(s)));
  return d;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "nsighttk's hand-written CUDA kernels (kernels/cuda/)";
  m.def("add", &add, "z = x + y");
  m.def("square", &unary<nsighttk::square>, "y = x * x");
  m.def("gelu", &unary<nsighttk::gelu_tanh>, "GELU, tanh approximation");
  m.def("softmax", &softmax, "softmax over the last dimension");
  m.def("matmul", &matmul, "C = A @ B, shared-memory tiles");
  m.def("cdist", &cdist, "Euclidean distances between the rows of x and y");
}
