"""softmax over rows: y[i] = exp(x[i] - max x[i]) / sum exp(...), with 4096 columns.

size = total elements (rows x 4096).  A fused kernel reads and writes each element once."""

import torch

from nsighttk.workload import Variant, Workload, cuda_ext

try:  # Triton is optional: its variant is listed as skipped without it
    import triton
    import triton.language as tl
except ImportError:
    triton = None

COLS = 4096

if triton is not None:

    @triton.jit
    def _softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(y_ptr + row * stride + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def triton_softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    rows, cols = x.shape
    _softmax_kernel[(rows,)](x, y, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols), num_warps=8)
    return y


def make_inputs(size: int, dtype: torch.dtype, device: str) -> tuple[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(size)
    rows = max(1, size // COLS)
    return ((torch.randn(rows, COLS, generator=g) * 4).to(device=device, dtype=dtype),)


WORKLOAD = Workload(
    name="softmax",
    description=f"row-wise softmax, {COLS} columns (one read, one write per element when fused)",
    make_inputs=make_inputs,
    reference=lambda x: torch.softmax(x, dim=-1),
    variants={
        "torch_softmax": Variant(lambda x: torch.softmax(x, dim=-1), description="torch.softmax"),
        "manual": Variant(lambda x: (e := torch.exp(x - x.max(dim=-1, keepdim=True).values)) / e.sum(-1, keepdim=True),
                          description="max, sub, exp, sum, div as separate ops"),
        "cuda": Variant(cuda_ext.softmax, requires=("cuda", "cuda_ext"),
                        description="kernels/cuda/softmax.cu, one block per row, online max/sum"),
        "triton": Variant(triton_softmax, requires=("triton",), description="one fused Triton kernel per row"),
    },
    bytes=lambda size, elem: 2 * max(1, size // COLS) * COLS * elem,
    flops=lambda size: 5 * size,
    sizes=(1 << 20, 1 << 24, 1 << 28),
)
