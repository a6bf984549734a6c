"""square: y = x * x, the seeds' (lecture 1) torch.square vs a * a vs a ** 2."""

import torch

from nsighttk.workload import Variant, Workload

try:  # Triton is optional: its variant is listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:

    @triton.jit
    def _square_block_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, x * x, mask=mask)


def triton_square(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    _square_block_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
    return y


def make_inputs(size: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(size)
    return (torch.randn(size, generator=g).to(device=device, dtype=dtype),)


WORKLOAD = Workload(
    name="square",
    description="y = x * x (one read, one write per element)",
    make_inputs=make_inputs,
    reference=lambda x: x * x,
    variants={
        "torch_square": Variant(torch.square, description="torch.square"),
        "mul": Variant(lambda a: a * a, description="a * a"),
        "pow": Variant(lambda a: a**2, description="a ** 2"),
        "triton": Variant(triton_square, requires=("triton",), description="Triton, fixed BLOCK_SIZE=4096"),
    },
    bytes=lambda size, elem: 2 * size * elem,
    flops=lambda size: size,
    sizes=(1 << 20, 1 << 24, 1 << 28),
)
