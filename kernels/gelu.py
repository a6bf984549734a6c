"""gelu (tanh approximation), seed 000: PyTorch's fused op vs the chain of ops in manual_gelu,
which launches one kernel per operation, vs one Triton kernel and torch.compile."""

import math

import torch

from nsighttk.workload import Variant, Workload, compiled, cuda_ext

try:  # Triton is optional: its variant is listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

K = math.sqrt(2.0 / math.pi)


def manual_gelu(x: torch.Tensor) -> torch.Tensor:
    """Seed 000's manual_gelu, as written there."""
    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


if triton is not None:

    @triton.jit
    def _gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        tanh = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)
        tl.store(y_ptr + offs, (0.5 * x * (1.0 + tanh)).to(y_ptr.dtype.element_ty), mask=mask)


def triton_gelu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    _gelu_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
    return y


def make_inputs(size: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(size)
    return ((torch.randn(size, generator=g) * 3).to(device=device, dtype=dtype),)


WORKLOAD = Workload(
    name="gelu",
    description="GELU, tanh approximation (one read, one write per element when fused)",
    make_inputs=make_inputs,
    reference=lambda x: 0.5 * x * (1 + torch.tanh(K * (x + 0.044715 * x**3))),
    variants={
        "torch_gelu": Variant(lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                              description='F.gelu(approximate="tanh")'),
        "manual_gelu": Variant(manual_gelu, description="the tanh formula as separate PyTorch ops (one kernel each)"),
        "cuda": Variant(cuda_ext.gelu, requires=("cuda", "cuda_ext"),
                        description="kernels/cuda/elementwise.cu, 16-byte loads (cpp_extension)"),
        "triton": Variant(triton_gelu, requires=("triton",), description="one fused Triton kernel"),
        "compiled_manual_gelu": Variant(compiled(manual_gelu), requires=("cuda", "compile"),
                                        description="torch.compile(manual_gelu)"),
    },
    bytes=lambda size, elem: 2 * size * elem,
    flops=lambda size: 10 * size,
    sizes=(1 << 20, 1 << 24, 1 << 28),
)
