"""A small PyTorch + Triton program that exercises everything the nsys reports summarise.

Nested NVTX ranges (``demo`` > ``step`` > ``h2d`` / ``compute`` / ``d2h``), two CUDA streams,
Host-to-Device, Device-to-Host and Device-to-Device copies, a ``cudaMemsetAsync``, cuBLAS/ATen
kernels and a Triton kernel.  Used to make the nsys fixtures under ``tests/fixtures`` and as the
Python example of ``nsighttk nsys``::

    nsighttk nsys kernels/streams_demo.py -- --steps 3
"""

from __future__ import annotations

import argparse
import ctypes
import sys

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - triton is optional
    triton = None


if triton is not None:

    @triton.jit
    def _scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha * x + y, with Triton when it is installed, else with PyTorch."""
    if triton is None:
        return alpha * x + y
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out


def _cudart() -> ctypes.CDLL | None:
    """The CUDA runtime already loaded by PyTorch, for cudaMemsetAsync (PyTorch has no memset)."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def memset_async(t: torch.Tensor, value: int, stream: torch.cuda.Stream) -> bool:
    lib = _cudart()
    if lib is None:
        t.fill_(value)
        return False
    rc = lib.cudaMemsetAsync(
        ctypes.c_void_p(t.data_ptr()),
        ctypes.c_int(value),
        ctypes.c_size_t(t.numel() * t.element_size()),
        ctypes.c_void_p(stream.cuda_stream),
    )
    if rc != 0:
        raise RuntimeError(f"cudaMemsetAsync failed with error {rc}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--n", type=int, default=1 << 20, help="elements per vector")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("streams_demo: no CUDA GPU visible; nothing to profile", file=sys.stderr)
        return 3

    dev = torch.device("cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    host = torch.randn(args.n, pin_memory=True)
    a = torch.randn(256, 256, device=dev)
    torch.cuda.nvtx.range_push("demo")
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        with torch.cuda.stream(s1):
            torch.cuda.nvtx.range_push("h2d")
            x = host.to(dev, non_blocking=True)
            torch.cuda.nvtx.range_pop()
        with torch.cuda.stream(s2):
            torch.cuda.nvtx.range_push("compute")
            y = torch.empty(args.n, device=dev)
            memset_async(y, 0, s2)
            b = a @ a
            torch.cuda.nvtx.range_pop()
        s2.wait_stream(s1)
        with torch.cuda.stream(s2):
            torch.cuda.nvtx.range_push("triton")
            z = scale_add(x, y, 2.0)
            w = z.clone()  # Device-to-Device copy
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("d2h")
            out = w.to("cpu")
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        ok = torch.allclose(out, 2.0 * host, atol=1e-5) and bool(torch.isfinite(b).all())
        torch.cuda.nvtx.range_pop()
        if not ok:
            print(f"streams_demo: step {step} gave a wrong result", file=sys.stderr)
            return 1
    torch.cuda.nvtx.range_pop()
    print(f"streams_demo: {args.steps} steps OK on {torch.cuda.get_device_name()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
