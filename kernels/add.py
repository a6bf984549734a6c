"""add: z = x + y over N float elements (seed 004's first program, as a workload)."""

import torch

from nsighttk.workload import Variant, Workload, compiled, cuda_ext

try:  # Triton is optional: its variant is listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:

    @triton.jit
    def _add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def triton_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, z, x.numel(), BLOCK=4096)
    return z


def make_inputs(size: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(size)
    return (torch.randn(size, generator=g).to(device=device, dtype=dtype),
            torch.randn(size, generator=g).to(device=device, dtype=dtype))


WORKLOAD = Workload(
    name="add",
    description="z = x + y (two reads, one write per element)",
    make_inputs=make_inputs,
    reference=lambda x, y: x + y,
    variants={
        "torch_add": Variant(torch.add, description="torch.add"),
        "operator": Variant(lambda x, y: x + y, description="x + y"),
        "cuda": Variant(cuda_ext.add, requires=("cuda", "cuda_ext"),
                        description="kernels/cuda/elementwise.cu, 16-byte loads (cpp_extension)"),
        "triton": Variant(triton_add, requires=("triton",), description="Triton, 4096 elements per program"),
        "compiled": Variant(compiled(torch.add), requires=("cuda", "compile"), description="torch.compile(torch.add)"),
    },
    bytes=lambda size, elem: 3 * size * elem,
    flops=lambda size: size,
    sizes=(1 << 20, 1 << 24, 1 << 28),
)
