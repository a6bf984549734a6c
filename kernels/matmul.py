"""matmul: C = A @ B for square N x N matrices (size = N).  Compute-bound: 2 N^3 FLOPs."""

import os

import torch

from nsighttk.workload import Variant, Workload, cuda_ext

try:  # Triton is optional: its variant is listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:

    @triton.jit
    def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
        pid = tl.program_id(0)
        n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = pid // (G * n_n)
        first_m = group * G
        size_m = min(n_m - first_m, G)
        pid_m = first_m + (pid % (G * n_n)) % size_m
        pid_n = (pid % (G * n_n)) // size_m
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc += tl.dot(tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0),
                          tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0))
            a += BK * sak
            b += BK * sbk
        c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))

    _matmul_autotuned = triton.autotune(
        configs=[
            triton.Config({"BM": 128, "BN": 256, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
            triton.Config({"BM": 128, "BN": 128, "BK": 64, "G": 8}, num_stages=4, num_warps=4),
            triton.Config({"BM": 256, "BN": 128, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
            # the tiles above need 192-288 KiB of shared memory for float32 (more than an H100's 227 KiB):
            # float32 gets these, which the autotuner picks because the others cannot launch
            triton.Config({"BM": 128, "BN": 128, "BK": 32, "G": 8}, num_stages=3, num_warps=8),
            triton.Config({"BM": 64, "BN": 128, "BK": 32, "G": 8}, num_stages=4, num_warps=4),
        ],
        key=["M", "N", "K"],
    )(_matmul_kernel)


def triton_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter cannot benchmark configs: use one
        _matmul_kernel[grid](*args, BM=32, BN=32, BK=32, G=8)
    else:
        _matmul_autotuned[grid](*args)
    return c


def make_inputs(size: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(size)
    return (torch.randn(size, size, generator=g).to(device=device, dtype=dtype),
            torch.randn(size, size, generator=g).to(device=device, dtype=dtype))


WORKLOAD = Workload(
    name="matmul",
    description="C = A @ B, square N x N (2 N^3 FLOPs)",
    make_inputs=make_inputs,
    reference=lambda a, b: a @ b,
    variants={
        "torch_matmul": Variant(torch.matmul, description="torch.matmul (cuBLAS)"),
        "cuda": Variant(cuda_ext.matmul, requires=("cuda", "cuda_ext"),
                        description="kernels/cuda/matmul.cu, 32x32 shared-memory tiles, no tensor cores"),
        "triton": Variant(triton_matmul, requires=("triton",), description="Triton tiled, autotuned"),
    },
    bytes=lambda size, elem: 3 * size * size * elem,
    flops=lambda size: 2 * size**3,
    sizes=(1024, 4096),
    # tl.dot and cuBLAS may use TF32 for float32 (relative error near 3e-4): allow it.
    tolerance={"float32": 2e-3},
)
