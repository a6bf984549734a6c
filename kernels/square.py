"""square: y = x * x, seed 001 (lecture 1): torch.square vs a * a vs a ** 2, a CUDA kernel loaded
into PyTorch, the lecture's two Triton kernels (one program per row, adapted from the fused-softmax
tutorial, and the fixed BLOCK_SIZE version that was much faster) and torch.compile."""

import torch

from nsighttk.workload import Variant, Workload, compiled, cuda_ext

try:  # Triton is optional: its variants are listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

COLS = 4096  # the row-per-program kernel sees the input as rows of this many elements

if triton is not None:

    @triton.jit
    def _square_row_kernel(y_ptr, x_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        """Seed 001's square_kernel: one program per row, the whole row in one block."""
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(y_ptr + row * y_row_stride + cols, x * x, mask=cols < n_cols)

    @triton.jit
    def _square_block_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, x * x, mask=mask)


def triton_square_rows(x: torch.Tensor) -> torch.Tensor:
    cols = COLS if x.numel() % COLS == 0 else x.numel()
    x2 = x.view(-1, cols)
    y = torch.empty_like(x2)
    block = triton.next_power_of_2(cols)
    num_warps = 16 if block >= 4096 else 8 if block >= 2048 else 4  # the seed's heuristic
    _square_row_kernel[(x2.shape[0],)](y, x2, x2.stride(0), y.stride(0), cols, num_warps=num_warps, BLOCK_SIZE=block)
    return y.view_as(x)


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
        "cuda": Variant(cuda_ext.square, requires=("cuda", "cuda_ext"),
                        description="kernels/cuda/elementwise.cu, 16-byte loads (cpp_extension)"),
        "triton_rows": Variant(triton_square_rows, requires=("triton",),
                               description=f"Triton, one program per {COLS}-element row"),
        "triton": Variant(triton_square, requires=("triton",), description="Triton, fixed BLOCK_SIZE=4096"),
        "compiled": Variant(compiled(torch.square), requires=("cuda", "compile"),
                            description="torch.compile(torch.square)"),
    },
    bytes=lambda size, elem: 2 * size * elem,
    flops=lambda size: size,
    sizes=(1 << 20, 1 << 24, 1 << 28),
)
