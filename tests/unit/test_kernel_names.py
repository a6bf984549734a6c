"""Kernel-name decoding on real names: every name below was recorded by nsys, ncu or torch.profiler
(the committed fixtures, HTA's public test traces, or public profiles quoted in repositories: the
comment above each group says where).  Each test asserts the decoded fields of each name."""

from __future__ import annotations

import functools
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from nsighttk.analysis.kernels.names import comm_library, decode, is_collective, short_label, short_labels

# --- communication kernels -------------------------------------------------------------------------------------
COMM = [
    # HTA tests/data (nccl_parser_config, trace_diff, trace_filter): NCCL 2.8-2.18 names, as Kineto spells them
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "NCCL"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "NCCL"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "NCCL"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "NCCL"),
    # NCCL >= 2.19 (public nsys/torch.profiler tables)
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", "NCCL"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "NCCL"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "NCCL"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)", "NCCL"),
    ("ncclDevKernel_AllReduce_Sum_f32_TREE_LL(ncclDevComm *, unsigned long, ncclWork *)", "NCCL"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", "NCCL"),
    ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "NCCL"),
    # NCCL 2.4-2.7 (nvprof / Paddle profiler tables)
    ("ncclAllReduceRingLLKernel_sum_f32(ncclColl)", "NCCL"),
    # NVSHMEM on-stream barrier (bytedance/flux test table), vLLM custom all-reduce, DeepEP (public nsys tables)
    ("void barrier_on_stream_kernel_threadgroup<(threadgroup_t)1>(int, int)", "NVSHMEM"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
     "__nv_bfloat16*, int, int)", "vLLM custom all-reduce"),
    ("void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int const*, int*, int, int, int, bool const*, "
     "int*, int*, int, int, void**, int**, int)", "DeepEP"),
]

NOT_COMM = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
    "float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
    "unsigned int, float, 4>)",
    "triton_poi_fused_add_mul_tanh_0",
    "_add_kernel",
    "add(int, const float *, float *)",
]


@pytest.mark.parametrize(("name", "library"), COMM)
def test_communication_kernels(name: str, library: str) -> None:
    assert is_collective(name) and comm_library(name) == library
    k = decode(name)
    assert (k.category, k.library) == ("communication", library)


@pytest.mark.parametrize("name", NOT_COMM)
def test_compute_kernels_are_not_collectives(name: str) -> None:
    assert not is_collective(name) and decode(name).category != "communication"


# --- names recorded in the committed captures ------------------------------------------------------------------
HTA = Path(__file__).parents[1] / "fixtures" / "hta"


@functools.cache
def _trace_names(rel: str) -> tuple[str, ...]:
    with gzip.open(HTA / rel, "rt") as fh:
        return tuple(sorted({e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}))


@functools.cache
def _sqlite_names(rel: str) -> tuple[str, ...]:
    with sqlite3.connect(Path(__file__).parents[1] / "fixtures" / rel) as c:
        return tuple(sorted(n for (n,) in c.execute("select distinct s.value from CUPTI_ACTIVITY_KIND_KERNEL k "
                                                    "join StringIds s on s.id = k.demangledName")))


def _one(names: tuple[str, ...], *needles: str) -> str:
    hits = [n for n in names if all(x in n for x in needles)]
    assert len(hits) == 1, (needles, hits)
    return hits[0]


RANK0 = "trace_filter/sampled_rank-0.json.gz"
NCCL = "nccl_parser_config/nccl_data.json.gz"
STREAMS = "h200-nsys2025.3/streams_demo.sqlite"
DDP = "h200x2-ddp/rank0.sqlite"

# (source, needles that pick one name, expected fields; "label" is short_label(name))
RECORDED: list[tuple[str, tuple[str, ...], dict[str, Any]]] = [
    (RANK0, ("unrolled_elementwise_kernel", "direct_copy", "lambda(float)"),
     {"library": "PyTorch (ATen)", "functor": "direct_copy", "dtypes": ["float32"], "category": "memory",
      "kind": "memory", "label": "elementwise direct_copy<f32> unrolled"}),
    (RANK0, ("elementwise_kernel<128, 2", "direct_copy"),
     {"functor": "direct_copy", "dtypes": ["float32"], "label": "elementwise direct_copy<f32> 128x2"}),
    (RANK0, ("vectorized_elementwise_kernel<4", "BinaryFunctor<float, float, float", "MulFunctor"),
     {"functor": "mul", "dtypes": ["float32"], "vector_width": 4, "category": "elementwise",
      "label": "elementwise mul<f32> vec4"}),
    (RANK0, ("vectorized_elementwise_kernel<4", "AUnaryFunctor<float", "MulFunctor"),
     {"functor": "mul", "label": "elementwise mul<f32> scalar-a vec4"}),
    (RANK0, ("vectorized_elementwise_kernel<4", "CUDAFunctorOnSelf_add<float>"),
     {"functor": "add", "label": "elementwise add<f32> scalar-b vec4"}),
    (RANK0, ("where_kernel_impl",), {"functor": "where", "dtypes": ["float32"]}),
    (RANK0, ("reduce_kernel", "MeanOps"), {"functor": "mean", "category": "reduction", "dtypes": ["float32"],
                                           "label": "reduce mean<f32> 512x1"}),
    (RANK0, ("reduce_kernel<512, 1", "sum_functor<double"), {"functor": "sum", "dtypes": ["float64"]}),
    (RANK0, ("multi_tensor_apply_kernel", "BinaryOpListAlphaFunctor"),
     {"functor": "add.List", "dtypes": ["float32"], "label": "foreach add.List<f32>"}),
    (RANK0, ("multi_tensor_apply_kernel", "BinaryOpScalarFunctor", "multiplies"),
     {"functor": "mul.Scalar", "label": "foreach mul.Scalar<f32>"}),
    (RANK0, ("_scatter_gather_elementwise_kernel", "ReduceAdd"),
     {"functor": "scatter_add", "dtypes": ["float32"], "category": "memory"}),
    (RANK0, ("_scatter_gather_elementwise_kernel", "<false, at::native::OpaqueType<4>"),
     {"functor": "gather", "dtypes": ["4-byte"]}),
    (RANK0, ("index_elementwise_kernel", "index_put_kernel_impl<at::native::OpaqueType<4>"),
     {"functor": "index_put", "dtypes": ["4-byte"], "category": "memory"}),
    (RANK0, ("softmax_warp_forward",), {"functor": "softmax", "dtypes": ["float32"], "category": "attention"}),
    (RANK0, ("indexSelectLargeIndex",), {"functor": "index_select", "dtypes": ["int64"]}),
    (RANK0, ("LayerNormForwardCUDAKernel",), {"functor": "layer_norm", "category": "normalization"}),
    (RANK0, ("ncclKernel_SendRecv",), {"collective": "SendRecv", "algorithm": "RING", "protocol": "SIMPLE",
                                       "redop": None, "dtypes": [], "kind": "communication",
                                       "label": "nccl SendRecv ring SIMPLE"}),
    (RANK0, ("cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4",),
     {"library": "CUTLASS", "arch": "sm_80", "tensor_cores": True, "tile": "256x128x32", "stages": 3,
      "layout": "nn", "category": "matrix"}),
    (RANK0, ("ampere_sgemm_128x64_nn",), {"library": "cuBLAS", "arch": "sm_80", "dtypes": ["float32"],
                                         "tile": "128x64", "tensor_cores": False, "layout": "nn"}),
    (NCCL, ("ncclKernel_AllReduce",), {"collective": "AllReduce", "algorithm": "RING", "protocol": "LL",
                                       "redop": "Sum", "dtypes": ["float32"],
                                       "label": "nccl AllReduce ring LL f32 sum"}),
    (NCCL, ("ncclKernel_Broadcast",), {"collective": "Broadcast", "redop": None, "dtypes": []}),
    (NCCL, ("sm80_xmma_wgrad", "split_k"), {"library": "cuDNN (xmma convolution)", "functor": "wgrad",
                                            "tile": "128x128x16", "stages": 4, "dtypes": ["tf32"]}),
    (NCCL, ("_ZN19cutlass_cudnn_train", "GemmShapeILi64ELi128"),
     {"library": "CUTLASS (in cuDNN)", "functor": "conv (implicit GEMM)", "tile": "64x128x32"}),
    (STREAMS, ("sm80_xmma_gemm_f32f32", "nn_n_tilesize32x32x8", "execute_kernel"),
     {"library": "cuBLAS (xmma)", "tensor_cores": False, "tile": "32x32x8", "dtypes": ["float32"]}),
    (STREAMS, ("CompareEqFunctor", "BinaryFunctor"), {"functor": "compare_eq", "dtypes": ["float32"]}),
    # 2 x H200 DDP training step (nsys 2025.3.1, torch 2.11): today's PyTorch, cuBLAS and NCCL names
    (DDP, ("ncclDevKernel_AllReduce",), {"collective": "AllReduce", "redop": "Sum", "dtypes": ["float32"],
                                         "algorithm": "RING", "protocol": "LL", "kind": "communication"}),
    (DDP, ("ncclDevKernel_Broadcast",), {"collective": "Broadcast", "dtypes": [], "redop": None}),
    (DDP, ("bfloat16_copy_kernel_cuda",), {"functor": "bfloat16_copy", "dtypes": ["float32", "bfloat16"],
                                           "vector_width": 8, "kind": "memory"}),
    (DDP, ("AUnaryFunctor<c10::BFloat16",), {"functor": "mul", "dtypes": ["bfloat16"],
                                             "label": "elementwise mul<bf16> scalar-a vec8"}),
    (DDP, ("masked_scale_kernel", "(int)8"), {"functor": "masked_scale", "dtypes": ["bfloat16"]}),
    (DDP, ("multi_tensor_apply_kernel", "LerpFunctor"), {"functor": "lerp.Scalar", "dtypes": ["float32"]}),
    (DDP, ("multi_tensor_apply_kernel", "PointwiseOpScalarListFunctor", "divides"),
     {"functor": "addcdiv.ScalarList"}),
    (DDP, ("nvjet_sm90_tst_96x128_64x7_2x1_v_bz_TNN",), {"dtypes": ["bfloat16"], "tile": "96x128x64", "stages": 7,
                                                         "layout": "TNN", "arch": "sm_90"}),
    (DDP, ("cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1",),
     {"library": "CUTLASS", "arch": "sm_75", "dtypes": ["bfloat16"], "tile": "128x128", "layout": "tn"}),
    (DDP, ("sdpa_sm90_flash_bprop",), {"library": "cuDNN (fused SDPA)", "functor": "sdpa flash bprop"}),
    (DDP, ("compute_dot_do_o",), {"library": "cuDNN", "category": "attention"}),
    (DDP, ("philox::unpack_cudnn",), {"library": "PyTorch (ATen)"}),
    (DDP, ("cunn_SoftMaxForward",), {"functor": "log_softmax", "dtypes": ["float32"]}),
    (DDP, ("vectorized_layer_norm_kernel",), {"functor": "layer_norm", "category": "normalization"}),
    (STREAMS, ("_scale_add_kernel",), {"library": "Triton (user kernel) or a plain CUDA kernel",
                                       "functor": "scale_add", "label": "scale_add"}),
    (STREAMS, ("reduce_kernel", "and_kernel_cuda"), {"functor": "and", "dtypes": ["bool"], "category": "reduction"}),
]


@pytest.mark.parametrize(("source", "needles", "expected"), RECORDED, ids=[" ".join(n) for _, n, _ in RECORDED])
def test_recorded_names(source: str, needles: tuple[str, ...], expected: dict[str, Any]) -> None:
    names = _sqlite_names(source) if source.endswith(".sqlite") else _trace_names(source)
    name = _one(names, *needles)
    k = decode(name)
    for field, want in expected.items():
        got = short_label(name) if field == "label" else getattr(k, field)
        assert got == want, (field, name)


# Public profiles (nsys tables and torch.profiler exports quoted in public repositories), as the tools print them
PUBLIC: list[tuple[str, dict[str, Any]]] = [
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::bfloat16_copy_kernel_cuda(at::TensorIterator"
     "Base &)::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)",
     {"functor": "bfloat16_copy", "dtypes": ["float32", "bfloat16"], "category": "memory", "vector_width": 4,
      "label": "elementwise bfloat16_copy<f32->bf16> vec4"}),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"
     "::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"
     "::{lambda(float)#1}, std::array<char*, 2ul>)",
     {"label": "elementwise bfloat16_copy<f32->bf16> vec4"}),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t, "
     "Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t> >, false, false, false, false, true, true, false, false>"
     "(pytorch_flash::Flash_fwd_params)",
     {"library": "FlashAttention-2 (PyTorch SDPA)", "functor": "attention forward", "tile": "128x64",
      "dtypes": ["float16"], "category": "attention"}),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0",
     {"library": "cuDNN (fused SDPA)", "arch": "sm_90", "tile": "64x128x64", "dtypes": ["float16"]}),
    ("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
     "true, 64, 64, 64, true, true>::Params)",
     {"functor": "attention forward", "arch": "sm_80", "tile": "64x64", "dtypes": ["float32"]}),
    ("nvjet_sm90_qqtst_128x128_128x6_1x2_h_bz_ovscale_TNT",
     {"library": "cuBLAS (nvjet)", "dtypes": ["float8", "bfloat16"], "tile": "128x128x128", "stages": 6,
      "cluster": "1x2", "layout": "TNT"}),
    ("nvjet_tst_64x8_64x16_2x1_v_bz_splitK_TNN", {"dtypes": ["bfloat16"], "tile": "64x8x64", "arch": None}),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
     "5x_cublas", {"library": "cuBLAS (xmma)", "arch": "sm_90", "dtypes": ["bfloat16"], "tensor_cores": True,
                   "warps": "1x1x1"}),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
     {"library": "cuBLAS", "arch": "sm_80", "tile": "128x128", "stages": 5, "layout": "tn", "tensor_cores": True,
      "dtypes": ["bfloat16"]}),
    ("Cijk_Ailk_Bljk_HHS_BH_MT64x16x32_MI16x16x16x1_SN_1LDSB0_ISA90a_SU32",
     {"library": "rocBLAS / hipBLASLt (Tensile)", "layout": "Ailk Bljk", "tile": "64x16x32", "tensor_cores": True,
      "arch": "gfx90a", "stages": None}),
    ("cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ttt_align8_warpspecialized_"
     "pingpong_epi_tma", {"library": "CUTLASS", "arch": "sm_90", "tile": "128x128x64", "cluster": "2x1x1",
                          "layout": "ttt", "dtypes": ["float16", "float32"]}),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     {"collective": "AllReduce", "redop": "Sum", "dtypes": ["bfloat16"], "algorithm": "RING", "protocol": "LL",
      "label": "nccl AllReduce ring LL bf16 sum"}),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     {"collective": "AllGather", "dtypes": [], "label": "nccl AllGather ring LL"}),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     {"collective": "ReduceScatter", "dtypes": ["float32"]}),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     {"collective": "SendRecv", "algorithm": None, "label": "nccl SendRecv"}),
    ("ncclAllReduceRingLLKernel_sum_f32(ncclColl)", {"collective": "AllReduce", "algorithm": "RING", "protocol": "LL",
                                                     "redop": "Sum", "dtypes": ["float32"]}),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
     "__nv_bfloat16*, int, int)", {"collective": "AllReduce", "dtypes": ["bfloat16"], "kind": "communication"}),
]


@pytest.mark.parametrize(("name", "expected"), PUBLIC, ids=[n[:60] for n, _ in PUBLIC])
def test_public_names(name: str, expected: dict[str, Any]) -> None:
    k = decode(name)
    for field, want in expected.items():
        got = short_label(name) if field == "label" else getattr(k, field)
        assert got == want, (field, name)


def test_nsys_and_torch_profiler_label_the_same_kernels_alike() -> None:
    """The same DDP loop under nsys and under torch.profiler: every kernel torch.profiler saw has the
    label of a kernel nsys saw, though the two demanglers spell their names differently."""
    with gzip.open(Path(__file__).parents[1] / "fixtures" / "h200x2-ddp" / "rank0.pt.trace.json.gz", "rt") as fh:
        kineto = {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}
    nsys = set(_sqlite_names(DDP))
    assert len(kineto) > 50 and len(kineto - nsys) > 30  # the C++ names are spelled differently...
    assert {short_label(n) for n in kineto} <= {short_label(n) for n in nsys}  # ...every label is


def test_both_demanglers_decode_alike() -> None:
    """nsys and torch.profiler spell one kernel differently; the decoded fields are the same."""
    nsys = PUBLIC[0][0]
    kineto = PUBLIC[1][0]
    a, b = decode(nsys), decode(kineto)
    assert (a.functor, a.dtypes, a.vector_width, a.category) == (b.functor, b.dtypes, b.vector_width, b.category)


# --- short labels ---------------------------------------------------------------------------------------------

def _all_recorded() -> list[tuple[str, tuple[str, ...]]]:
    return [(r, _trace_names(r)) for r in (RANK0, "trace_filter/sampled_rank-1.json.gz", NCCL)] + \
        [(s, _sqlite_names(s)) for s in (STREAMS, "h100-ranks/rank0.sqlite")]


def test_labels_are_short_never_empty_and_fit_the_width() -> None:
    for _, names in _all_recorded():
        for n in names:
            full = short_label(n)
            assert full and "\n" not in full and len(full) <= len(n) + 8, n
            assert len(n) < 120 or len(full) <= 100, n
            for width in (20, 40, 60):
                cut = short_label(n, width)
                assert cut and len(cut) <= width, (n, width, cut)
            assert short_label(n) == full  # deterministic
    assert short_label("") == "(unnamed kernel)"
    assert "\n" not in short_label("evil\nname\x1b[31m")


def test_labels_keep_names_apart() -> None:
    """Within each capture, distinct kernels get distinct labels from short_labels (at any width), and
    short_label alone keeps them apart except where the names differ only past what the label shows."""
    for source, names in _all_recorded():
        for width in (None, 48, 32):
            labels = short_labels(names, width)
            assert len(set(labels)) == len(names), (source, width)
            assert all(width is None or len(x) <= width for x in labels)
        alone = {short_label(n) for n in names}
        assert len(alone) >= len(names) - 1, source  # one pair of cub scans differs only deep in its arguments


def test_width_drops_detail_first() -> None:
    name = "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT"
    assert short_label(name) == "nvjet gemm 192x128x64 bf16 s5 1x2 h bz coopB bias TNT"
    assert short_label(name, 30) == "nvjet gemm 192x128x64 bf16 TNT"
    assert short_label(name, 16) == "nvjet gemm bf16"


def test_hostile_names_are_bounded() -> None:
    """Names from a hostile export: huge, deeply nested, unbalanced; decoded in bounded time (no timing
    asserted: a quadratic decoder would not finish these in the test's lifetime), never empty."""
    for name in ("void at::native::vectorized_elementwise_kernel<4, " + "a<" * 200_000, "x" * 1_000_000,
                 "void at::native::f<" + "(" * 100_000, "ncclDevKernel_" + "<" * 100_000, "_Z" + "9abcdefghi" * 10_000):
        assert short_label(name, 40) and decode(name).name == name


def test_every_recorded_template_kernel_names_its_work() -> None:
    """Across all committed captures: no ATen template kernel is left at its template's name (the
    decoder used to stop at 'unrolled_elementwise_kernel: ...'), every NCCL kernel names its
    collective, every kernel has a family and a kind."""
    templates = ("vectorized_elementwise_kernel", "unrolled_elementwise_kernel", "at::native::elementwise_kernel<",
                 "reduce_kernel<", "multi_tensor_apply_kernel", "index_elementwise_kernel", "_scatter_gather")
    seen = 0
    for _, names in [*_all_recorded(), (DDP, _sqlite_names(DDP))]:
        for n in names:
            k = decode(n)
            assert k.family != "unknown" and k.kind in ("compute", "memory", "communication"), n
            if any(t in n for t in templates):
                seen += 1
                assert k.functor and k.functor != k.template and "kernel" not in k.functor, n
            if n.startswith("nccl"):
                assert k.collective and k.as_dict()["kind"] == "communication", n
    assert seen > 60


def test_kernels_recorded_on_an_h100_are_all_named() -> None:
    """The 57 kernels nsys recorded on an H100 running tests/gpu/kernel_names.py (fused and foreach
    AdamW/Adam, FlashAttention-2, memory-efficient and cuDNN SDPA forward and backward, Inductor with
    max-autotune, casts): each gets its library and what it does, and a column of them stays distinct."""
    from nsighttk.analysis.kernels.names import decode, short_labels

    names = (Path(__file__).parents[1] / "fixtures" / "h100-torch2.11" / "kernel_names_h100.txt").read_text()
    names = names.splitlines()
    assert len(names) == 57
    infos = [decode(n) for n in names]
    assert all(i.library and i.library != "unknown" for i in infos)
    labels = short_labels(names)
    assert len(set(labels)) == len(names) and not any(lab.startswith("void ") for lab in labels)
    by_family = {i.library for i in infos}
    assert {"FlashAttention-2 (PyTorch SDPA)", "cuDNN (fused SDPA)", "cuBLAS (nvjet)", "CUTLASS"} <= by_family
    assert sum("fused_adamw" in lab for lab in labels) == 1 and sum("fused_adam<" in lab for lab in labels) == 1
