"""cdist: pairwise Euclidean distances between two point sets, seed 000.

size = points per set (M = N), each of ``DIM`` features; the output is M x N.  torch.cdist uses
the expansion ||x - y||^2 = ||x||^2 + ||y||^2 - 2 x.y (a matmul plus reductions, the ATen ops the
seed found: matmul, cat, pow, sum) for large inputs; "expanded" writes that out in PyTorch, the
CUDA and Triton variants compute the distances directly or with one fused kernel."""

import torch

from nsighttk.workload import Variant, Workload, cuda_ext

try:  # Triton is optional: its variant is listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

DIM = 64

if triton is not None:

    @triton.jit
    def _cdist_kernel(x_ptr, y_ptr, d_ptr, M, N, D, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        """One BM x BN tile of distances from x.y (IEEE float32, no TF32) and both squared norms."""
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        dot = tl.zeros((BM, BN), dtype=tl.float32)
        xn = tl.zeros((BM,), dtype=tl.float32)
        yn = tl.zeros((BN,), dtype=tl.float32)
        for k0 in range(0, D, BK):
            kmask = (k0 + rk) < D
            x = tl.load(x_ptr + rm[:, None] * D + k0 + rk[None, :], mask=(rm[:, None] < M) & kmask[None, :],
                        other=0.0).to(tl.float32)
            y = tl.load(y_ptr + rn[:, None] * D + k0 + rk[None, :], mask=(rn[:, None] < N) & kmask[None, :],
                        other=0.0).to(tl.float32)
            dot += tl.dot(x, tl.trans(y), input_precision="ieee")
            xn += tl.sum(x * x, axis=1)
            yn += tl.sum(y * y, axis=1)
        d2 = tl.maximum(xn[:, None] + yn[None, :] - 2.0 * dot, 0.0)
        tl.store(d_ptr + rm[:, None] * N + rn[None, :], tl.sqrt(d2).to(d_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_cdist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    M, D = x.shape
    N = y.shape[0]
    d = torch.empty((M, N), device=x.device, dtype=x.dtype)
    _cdist_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, y, d, M, N, D, BM=64, BN=64, BK=32)
    return d


def expanded_cdist(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """What torch.cdist does for large inputs, written out (seed 000's formula)."""
    xn = x.pow(2).sum(-1, keepdim=True)
    yn = y.pow(2).sum(-1, keepdim=True)
    return (xn + yn.T - 2 * x @ y.T).clamp_min(0).sqrt()


def make_inputs(size: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(size)
    return (torch.randn(size, DIM, generator=g).to(device=device, dtype=dtype),
            torch.randn(size, DIM, generator=g).to(device=device, dtype=dtype))


WORKLOAD = Workload(
    name="cdist",
    description=f"pairwise Euclidean distances, M = N points of {DIM} features (output M x N)",
    make_inputs=make_inputs,
    reference=lambda x, y: torch.cdist(x, y),
    variants={
        "torch_cdist": Variant(torch.cdist, description="torch.cdist (p=2)"),
        "expanded": Variant(expanded_cdist, description="||x||^2 + ||y||^2 - 2 x@y.T, clamp, sqrt (4+ kernels)"),
        "cuda": Variant(cuda_ext.cdist, requires=("cuda", "cuda_ext"),
                        description="kernels/cuda/cdist.cu, direct differences in shared-memory tiles"),
        "triton": Variant(triton_cdist, requires=("triton",), description="one fused Triton kernel (x.y + norms)"),
    },
    bytes=lambda size, elem: (2 * size * DIM + size * size) * elem,
    flops=lambda size: 3 * size * size * DIM,
    sizes=(1024, 4096),
    # The expansion cancels when points are close; random points in 64-d are not (error ~1e-6).
    tolerance={"float32": 1e-4},
)
