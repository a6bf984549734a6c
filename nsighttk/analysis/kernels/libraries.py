"""Decoders for the kernel names of NVIDIA's libraries and the communication libraries: cuBLAS
(nvjet, xmma, the pre-Hopper ``ampere_sgemm_*`` family and its helper kernels), CUTLASS 2.x and
3.x, cuDNN (convolutions, batch norm, its fused SDPA), FlashAttention and memory-efficient
attention, NCCL/RCCL, NVSHMEM and other GPU-to-GPU libraries.  Each ``decode_*`` fills a
:class:`KernelInfo` from what the name spells; nothing is guessed that the name does not say.
The grammars come from the libraries' own generators where they are public (NCCL
``src/device/generate.py``, CUTLASS's profiler naming, cuDNN/cuBLAS names as nsys prints them)."""

from __future__ import annotations

import re

from nsighttk.analysis.kernels.info import (
    KernelInfo,
    code_dtype,
    cxx_dtype,
    data_type,
    parse,
    short_dtype,
    type_args,
    value_args,
    values_token,
)

_ARCHS = {"maxwell": "sm_50", "pascal": "sm_60", "volta": "sm_70", "turing": "sm_75", "ampere": "sm_80",
          "ada": "sm_89", "hopper": "sm_90", "blackwell": "sm_100"}
_TYPE_CODES = r"bf16|tf32|f16|f32|f64|e4m3|e5m2|s8|u8|i8|s32|fp8|fp16|fp32"


def _found(pattern: str, text: str, otherwise: str | None = None, group: int = 1) -> str | None:
    """``group`` of the first match of ``pattern`` in ``text``; ``otherwise`` where it does not match
    (a field's value so far: what the name does not say stays as it was)."""
    m = re.search(pattern, text)
    return m.group(group) if m else otherwise


def _found_int(pattern: str, text: str, otherwise: int | None = None, group: int = 1) -> int | None:
    found = _found(pattern, text, group=group)
    return otherwise if found is None else int(found)


def _dt(k: KernelInfo, priority: int = 2) -> None:
    """The short dtype token: ``bf16``, or ``fp8->bf16`` when the output type differs."""
    if not k.dtypes:
        return
    first, last = short_dtype(k.dtypes[0]), short_dtype(k.dtypes[-1])
    k.tokens.append((priority, first if first == last else f"{first}->{last}"))


# ------------------------------------------------------------------------------------------------ communication

_NCCL_ALGOS = r"COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|TREE|RING|PAT"
_NCCL_REDOPS = r"SumPostDiv|PreMulSum|MinMax|Sum|Prod|Min|Max|Avg"
_NCCL_REDUCING = ("AllReduce", "Reduce", "ReduceScatter")
_NCCL_DEV = re.compile(rf"nccl(?:Dev)?Kernel_(?P<coll>AllReduce|AllGatherV|AllGather|ReduceScatter|Reduce|Broadcast|"
                       rf"SendRecv|Generic)(?:_(?P<redop>{_NCCL_REDOPS})_(?P<ty>[a-z0-9]+))?"
                       rf"(?:_(?P<algo>{_NCCL_ALGOS})_(?P<proto>LL128|LL|SIMPLE))?(?:_\d+)?\b")
_NCCL_OLD = re.compile(rf"ncclKernel_(?P<coll>\w+?)_(?P<algo>{_NCCL_ALGOS})_(?P<proto>LL128|LL|SIMPLE)_"
                       rf"(?P<redop>{_NCCL_REDOPS})_(?P<ty>\w+?)(?:\(|$)")
_NCCL_V24 = re.compile(r"nccl(?P<coll>AllReduce|AllGather|ReduceScatter|Reduce|Broadcast|SendRecv)"
                       r"(?P<algo>Ring|Tree|CollNet)?(?P<proto>LL128|LL)?Kernel_(?P<redop>sum|prod|min|max|copy)_"
                       r"(?P<ty>\w+?)(?:\(|$)")
_NCCL_SYMK = re.compile(r"ncclSymkDevKernel_(?P<coll>AllReduce|AllGather|ReduceScatter)_(?P<algo>\w+?)"
                        r"(?:_(?P<redop>sum|avg)_(?P<ty>f32|f16|bf16|f8e4m3|f8e5m2))?(?:_profile)?(?:\(|$)")
_NVSHMEM_COLL = {"alltoall": "AllToAll", "barrier": "Barrier", "barrier_all": "Barrier", "broadcast": "Broadcast",
                 "fcollect": "AllGather", "rdxn": "AllReduce", "reducescatter": "ReduceScatter", "sync": "Sync",
                 "sync_all": "Sync"}


def decode_comm(name: str, library: str, k: KernelInfo) -> None:
    k.family, k.library, k.category = "communication", library, "communication"
    if library == "NCCL":
        _decode_nccl(name, k)
        return
    c = parse(name)
    k.template = c.base
    k.tokens.append((3, library.split()[0].lower()))
    if library == "NVSHMEM":
        m = re.match(r"(\w+?)_on_stream_kernel", c.base)
        k.collective = _NVSHMEM_COLL.get(m.group(1)) if m else None
        k.functor = k.collective or c.base
        k.dtypes = type_args(c.args)[:1]
    elif library == "vLLM custom all-reduce":
        k.collective, k.functor = "AllReduce", "AllReduce"
        k.algorithm = c.base.removeprefix("cross_device_reduce_")
        k.dtypes = type_args(c.args)[:1]
        ranks = value_args(c.args)
        if ranks:
            k.notes.append(f"{ranks[0]} GPUs")
    else:  # PyTorch symmetric memory, DeepEP: the kernel's own name says what it does
        scope = c.qualname.split("::")[-2] if c.qualname.count("::") >= 1 else ""
        k.functor = f"{scope} {c.base}".strip() if library == "DeepEP" else c.base.removesuffix("_kernel")
        k.dtypes = type_args(c.args)[:1]
    k.op = k.functor
    k.tokens.append((3, k.functor or c.base))
    if k.algorithm:
        k.tokens.append((1, k.algorithm))
    _dt(k)


def _decode_nccl(name: str, k: KernelInfo) -> None:
    plain = name.strip()
    m = _NCCL_SYMK.match(plain)
    if m:
        k.collective, k.algorithm = m.group("coll"), m.group("algo")
        k.redop = {"sum": "Sum", "avg": "SumPostDiv"}.get(m.group("redop") or "")
        k.notes.append("NCCL symmetric-memory kernel: the algorithm in the name is the one that ran")
    else:
        m = _NCCL_DEV.match(plain) or _NCCL_OLD.match(plain)
        if m:
            k.collective, k.algorithm, k.protocol = m.group("coll"), m.group("algo"), m.group("proto")
            k.redop = m.group("redop")
        else:
            m = _NCCL_V24.match(plain)
            if m:
                k.collective = m.group("coll")
                k.algorithm = (m.group("algo") or "").upper() or None
                k.protocol = m.group("proto") or "SIMPLE"
                k.redop = {"sum": "Sum", "prod": "Prod", "min": "Min", "max": "Max"}.get(m.group("redop"))
        if k.collective and k.collective not in ("Generic",):
            k.notes.append("NCCL names a kernel after the function it is specialised for; other algorithms, protocols "
                           "and reduction ops of the same collective and type run inside it, so the algorithm and "
                           "protocol here are the kernel's, not necessarily those NCCL chose")
    if m and k.collective in _NCCL_REDUCING and m.group("ty"):
        ty = m.group("ty")
        dt = code_dtype(ty) or cxx_dtype(ty) or code_dtype(ty.removeprefix("_"))
        k.dtypes = [dt or ty]
    elif k.collective not in _NCCL_REDUCING:
        k.redop = None  # NCCL's non-reducing kernels carry a placeholder Sum_int8_t
    k.functor = k.collective or "kernel"
    k.template = plain.split("(", 1)[0]
    k.op = " ".join(x for x in (k.collective, k.algorithm, k.protocol) if x) or k.template
    k.tokens += [(3, "nccl"), (3, k.functor)]
    if k.algorithm:
        k.tokens.append((1, k.algorithm.lower()))
    if k.protocol:
        k.tokens.append((1, k.protocol))
    _dt(k)
    if k.redop:
        k.tokens.append((2, k.redop.lower()))


# ------------------------------------------------------------------------------------------------ cuBLAS

#: nvjet's type letters (``tst``: bf16 inputs, float32 compute, bf16 output; ``qqtst``: fp8 A and B).
_NVJET_TYPES = {"h": "float16", "t": "bfloat16", "s": "float32", "d": "float64", "q": "float8", "i": "int8"}


def decode_nvjet(name: str, k: KernelInfo) -> None:
    # nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT, nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT
    k.family, k.library, k.category, k.tensor_cores = "nvjet", "cuBLAS (nvjet)", "matrix", True
    k.template, k.functor = "nvjet", "gemm"
    m = re.match(r"nvjet_(?:(?P<arch>sm\d+a?)_)?(?P<types>[a-z]{3,5})_(?P<tile>\d+x\d+)_(?P<k>\d+)x(?P<st>\d+)_"
                 r"(?P<cl>\d+x\d+)_?(?P<rest>.*)$", name)
    if not m:
        k.tokens += [(3, "nvjet"), (3, name.removeprefix("nvjet_"))]
        return
    if m.group("arch"):
        k.arch = "sm_" + m.group("arch")[2:]
    types = m.group("types")
    if all(c in _NVJET_TYPES for c in types):
        ins = types[:2] if len(types) == 5 else types[:1]
        k.dtypes = list(dict.fromkeys([_NVJET_TYPES[c] for c in ins] + [_NVJET_TYPES[types[-1]]]))
        k.notes.append(f"types '{types}': inputs {'/'.join(_NVJET_TYPES[c] for c in ins)}, compute "
                       f"{_NVJET_TYPES[types[-2]]}, output {_NVJET_TYPES[types[-1]]}")
    k.tile = f"{m.group('tile')}x{m.group('k')}"
    k.stages, k.cluster = int(m.group("st")), m.group("cl")
    rest = [p for p in m.group("rest").split("_") if p]
    if rest and re.fullmatch(r"[NT]{2,3}", rest[-1]):
        k.layout = rest.pop()
    if "splitK" in rest:
        k.notes.append("split-K: K is split across CTAs and the partial sums reduced")
    k.op = "gemm"
    k.notes.append("tile = CTA M x N x K-slice, then pipeline stages; cluster = thread-block cluster shape")
    k.tokens += [(3, "nvjet"), (3, "gemm"), (1, k.tile)]
    _dt(k)
    k.tokens += [(0, f"s{k.stages}"), (0, k.cluster)] + [(0, p) for p in rest]
    if k.layout:
        k.tokens.append((1, k.layout))


def decode_xmma(name: str, k: KernelInfo) -> None:
    # sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel_..
    # sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel_..
    # sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_..._cudnn_infer
    k.family, k.category = "xmma", "matrix"
    arch = _found(r"^sm(\d+a?)_xmma_", name)
    k.arch = f"sm_{arch}" if arch else k.arch
    kind = next((x for x in ("fprop", "dgrad", "wgrad") if f"_{x}_" in name), "gemm")
    k.functor = k.op = kind
    k.template = "xmma"
    k.library = "cuDNN (xmma convolution)" if kind != "gemm" or "cudnn" in name else "cuBLAS (xmma)"
    if name.endswith("cublas") or "_cublas" in name:
        k.library = "cuBLAS (xmma)"
    dm = re.search(rf"_((?:{_TYPE_CODES}){{2}})_((?:{_TYPE_CODES}){{1,2}})_({_TYPE_CODES})_", name)
    if dm:
        ab = re.findall(_TYPE_CODES, dm.group(1))
        c = re.findall(_TYPE_CODES, dm.group(2))
        k.dtypes = list(dict.fromkeys([code_dtype(ab[0]) or ab[0], code_dtype(c[0]) or c[0]]))
        k.notes.append(f"types: A {ab[0]}, B {ab[-1]}, C {c[0]}, accumulate {c[-1]}, compute {dm.group(3)}")
    k.layout = _found(r"_(nn|nt|tn|tt)_(n|t)_", name) or _found(r"_(nhwckrsc_\w+?)_tilesize", name, k.layout)
    k.tile = _found(r"tilesize(\d+x\d+x\d+)", name, k.tile)
    k.stages = _found_int(r"stage(\d+)", name, k.stages)
    k.warps = _found(r"warp(?:group)?size(\d+x\d+x\d+)", name, k.warps)
    if "_ffma_" in name or name.endswith("_ffma") or "_ff_" in name:
        k.tensor_cores = False
        k.notes.append("FFMA: plain fp32 fused multiply-adds on CUDA cores, no tensor cores")
    elif re.search(r"hmma|imma|tensor\d|tensorop|wgmma|warpgroup|_tf32|bf16|f16", name):
        k.tensor_cores = True
    split = "split_k" in name or "splitK" in name
    if split:
        k.notes.append("split-K: K is split across CTAs and the partial sums reduced")
    segment = re.search(r"segment_k_(on|off)", name)
    k.tokens += [(3, "xmma"), (3, kind), (1, k.tile or "")]
    _dt(k)
    if k.tensor_cores is False:
        k.tokens.append((2, "ffma"))
    k.tokens += [(0, k.layout or ""), (0, f"s{k.stages}" if k.stages else ""), (0, k.warps or ""),
                 (1, "splitK" if split else ""), (0, f"segK-{segment.group(1)}" if segment else "")]
    if "indexed" in name:
        k.tokens.append((0, "indexed"))
    k.tokens += [(0, a) for a in re.findall(r"(?<=_)(align[ac]\d+)(?=_)", name)]


def decode_cutlass(name: str, k: KernelInfo) -> None:
    # cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4
    # cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x256_32x3_tn_align8
    # cutlass_tensorop_s1688dgrad_optimized_tf32_128x128_16x4_nhwc_unity_stride_align4 (inside cuDNN)
    # cutlass3x_sm90_tensorop_s64x128x16gemm_f16_f16_f32_f16_f16_128x128x64_2x1x1_0_ttt_align8_warpspecialized_..
    m = re.search(r"cutlass(?:3x)?_\w*?(?:gemm|fprop|dgrad|wgrad)\w*", name)
    core = m.group(0) if m else name
    k.family, k.category = "cutlass", "matrix"
    k.library = "CUTLASS (in cuDNN)" if "cudnn" in name else "CUTLASS"
    arch = _found(r"^cutlass(?:3x)?_(?:sm)?(\d{2,3}a?)_", core)
    k.arch = f"sm_{arch}" if arch else k.arch
    k.tensor_cores = "tensorop" in core or "wmma" in core or "wgmma" in core
    im = re.search(r"_([hsdicz]?)(\d+(?:x\d+x\d+)?)?(gemm|fprop|dgrad|wgrad|conv\w*?)(?=_|$)", core)
    kind = im.group(3) if im else "gemm"
    k.functor = k.op = kind
    k.template = "cutlass3x" if core.startswith("cutlass3x") else "cutlass"
    if im and im.group(2):
        k.notes.append("mma instruction " + _mma_shape(im.group(2)))
    after = core[im.end():] if im else core
    before = core[:im.start()] if im else ""
    types = re.findall(rf"(?<=_)(?:{_TYPE_CODES})(?=_|$)", before + "_" + after)
    if not types and im and im.group(1):
        types = [{"h": "f16", "s": "f32", "d": "f64", "i": "s8", "c": "c64", "z": "c128"}.get(im.group(1), "")]
    k.dtypes = list(dict.fromkeys(code_dtype(t) or t for t in types if t))
    if len(types) >= 3:
        k.notes.append("types: " + ", ".join(types))
    dims = re.findall(r"(?<=_)(\d+x\d+(?:x\d+)?)(?=_|$)", after)
    if dims:
        k.tile = dims[0]
        if len(dims) > 1:
            if dims[1].count("x") == 2:
                k.cluster = dims[1]
            else:
                kk, st = dims[1].split("x")
                k.tile, k.stages = f"{k.tile}x{kk}", int(st)
    k.layout = _found(r"_(nn|nt|tn|tt|[nt]{3}|nhwc|ndhwc)(?=_|$)", after, k.layout)
    epi = [w for w in re.findall(r"(?<=_)(relu|gelu|silu|bias|bgrada|bgradb)(?=_|$)", core)]
    sched = [w for w in re.findall(r"(?<=_)(warpspecialized|pingpong|cooperative|tma|nosmem|optimized|analytic)"
                                   r"(?=_|$)", core)]
    k.tokens += [(3, k.template), (3, kind), (1, k.tile or "")]
    _dt(k)
    align = re.search(r"_align(\d+)(?=_|$)", core)
    k.tokens += [(1, e) for e in epi] + [(0, k.layout or ""), (0, f"s{k.stages}" if k.stages else ""),
                                         (0, k.cluster or ""), (0, f"align{align.group(1)}" if align else "")]
    k.tokens += [(0, s) for s in sched]
    if "simt" in core:
        k.tokens.append((2, "simt"))


def _mma_shape(digits: str) -> str:
    """``1688`` -> ``16x8x8``, ``16816`` -> ``16x8x16``, ``64x128x16`` stays."""
    if "x" in digits:
        return digits
    ok = {"1", "2", "4", "8", "16", "32", "64", "128", "256"}
    for i in range(1, len(digits) - 1):
        for j in range(i + 1, len(digits)):
            parts = (digits[:i], digits[i:j], digits[j:])
            if all(p in ok for p in parts):
                return "x".join(parts)
    return digits


def decode_cublas_legacy(name: str, k: KernelInfo) -> None:
    # ampere_sgemm_128x64_nn, volta_h884gemm_64x64_ldg8_nn, ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn
    k.family, k.library, k.category = "cublas-legacy", "cuBLAS", "matrix"
    k.arch = _ARCHS.get(name.split("_")[0])
    k.template, k.functor = "gemm", "gemm"
    gm = re.search(r"_(?:(?P<dt>[a-z0-9]+)_)?(?P<acc>[hsdcz]|gc|gz)?(?P<inst>\d*)gemm", name)
    k.tensor_cores = bool(gm and gm.group("inst"))
    explicit = re.findall(rf"(?<=_)(?:{_TYPE_CODES})(?=_)", name)
    if explicit:
        k.dtypes = list(dict.fromkeys(code_dtype(t) or t for t in explicit))
    elif gm and gm.group("acc"):
        k.dtypes = [{"s": "float32", "h": "float16", "d": "float64", "c": "complex64", "z": "complex128",
                     "gc": "complex64", "gz": "complex128"}[gm.group("acc")]]
    k.tile = _found(r"_(\d+x\d+)(?=_)", name, k.tile)
    k.layout = _found(r"_(nn|nt|tn|tt)$", name, k.layout)
    k.stages = _found_int(r"stages_(\d+)x(\d+)", name, k.stages, group=2)
    k.op = "gemm"
    extra = re.findall(r"(?<=_)(sliced\d+x\d+|ldg\d+|f2f|relu|splitK|interior|small|medium|large)(?=_|$)", name)
    k.tokens += [(3, name.split("_")[0]), (3, "gemm"), (1, k.tile or "")]
    _dt(k)
    k.tokens += [(0, e) for e in extra] + [(0, k.layout or "")]


#: cuBLAS / cuBLASLt helper kernels, by the start of their (template-free) name.
_CUBLAS_HELPERS = (
    (re.compile(r"gemv"), "gemv", "matrix"), (re.compile(r"gemmk1|gemmSN|sgemm_largek|magma_\w*gemm|gemm"), "gemm",
                                             "matrix"),
    (re.compile(r"splitKreduce"), "split-K reduce", "matrix"), (re.compile(r"globalKernel"), "epilogue", "matrix"),
    (re.compile(r"scal_kernel"), "scal", "elementwise"), (re.compile(r"dot_kernel|reduce_1Block"), "dot", "reduction"),
    (re.compile(r"axpy"), "axpy", "elementwise"),
)


def decode_cublas_helper(name: str, k: KernelInfo) -> bool:
    """cuBLAS's own kernels besides the GEMM families (gemv, split-K reduction, epilogues, scal)."""
    c = parse(name)
    if "cublas" not in name.lower() and not re.match(r"(gemv|gemmk1|gemmSN|sgemm_largek|magma_sgemm)", c.base):
        return False
    label = next(((f, cat) for rx, f, cat in _CUBLAS_HELPERS if rx.search(c.qualname)), None)
    if label is None:
        return False
    k.family = "cublas"
    k.library = "cuBLASLt" if "cublasLt" in name else "cuBLAS"
    k.functor, k.category = label
    k.template = c.qualname.removeprefix("internal::")
    k.op = f"{c.base}: {k.functor}"
    k.dtypes = data_type(type_args(c.args))
    if k.functor == "split-K reduce":
        k.notes.append("the reduction step of a split-K GEMM: the partial sums of CTAs that split K are added")
    k.tokens += [(3, "cublas"), (3, k.functor), (1, c.base if c.base != k.functor else "")]
    _dt(k)
    k.tokens.append((0, values_token(c.args)))
    return True


def decode_tensile(name: str, k: KernelInfo) -> None:
    """ROCm's Tensile GEMMs (rocBLAS / hipBLASLt): ``Cijk_Ailk_Bljk_SB_..._MT64x16x32_MI16x16x1_...``,
    C[i,j] = sum_k A[...] B[...] in index notation, then the macro tile (MT) and matrix instruction (MI)."""
    k.family, k.library, k.category, k.template, k.functor = "tensile", "rocBLAS / hipBLASLt (Tensile)", "matrix", \
        "Tensile", "gemm"
    k.op = "gemm"
    m = re.match(r"Cijk_(A\w+?)_(B\w+?)_", name)
    if m:
        k.layout = f"{m.group(1)} {m.group(2)}"
    k.tile = _found(r"_MT(\d+x\d+x\d+)", name)
    mi = _found(r"_MI(\d+x\d+x\d+)", name)
    k.tensor_cores = bool(mi)
    if mi:
        k.notes.append(f"matrix-core instruction {mi} (MFMA)")
    isa = _found(r"_ISA(\d+\w?)_", name)
    k.arch = f"gfx{isa}" if isa else k.arch
    k.tokens += [(3, "tensile"), (3, "gemm"), (1, k.tile or ""), (0, k.layout or ""), (0, f"MI{mi}" if mi else "")]


# ------------------------------------------------------------------------------------------------ cuDNN

def decode_cudnn(name: str, k: KernelInfo) -> None:
    k.family, k.library = "cudnn", "cuDNN"
    plain = name.strip()
    sm = re.match(r"cudnn_generated_fort_native_sdpa_sm(\d+)_(\w+?)_(fprop|bprop)_(\w+?)_(f16|bf16|f32|fp8\w*)_"
                  r"knob_(\d+)_(\d+x\d+x\d+)_(\d+x\d+x\d+)_cga(\d+x\d+x\d+)", plain)
    if sm:
        k.library, k.category, k.tensor_cores = "cuDNN (fused SDPA)", "attention", True
        k.family = "flash-attn"
        k.arch = "sm_" + sm.group(1)
        k.functor = k.op = f"sdpa {sm.group(2)} {sm.group(3)}"
        k.template = "cudnn sdpa"
        k.dtypes = [code_dtype(sm.group(5)) or sm.group(5)]
        k.tile, k.warps, k.cluster = sm.group(7), sm.group(8), sm.group(9)
        k.notes.append(f"cuDNN's generated fused attention ({sm.group(2)}, {sm.group(3)} = "
                       f"{'forward' if sm.group(3) == 'fprop' else 'backward'}), {sm.group(4)} instructions, "
                       f"knob {sm.group(6)}")
        k.tokens += [(3, "cudnn"), (3, "sdpa"), (3, sm.group(3)), (1, k.tile)]
        _dt(k)
        k.tokens += [(0, f"knob{sm.group(6)}"), (0, sm.group(2))]
        return
    gm = re.match(r"(?:cudnn_)?(?:(infer|train)_)?(maxwell|pascal|volta|turing|ampere|ada|hopper|sm\d+)_"
                  r"([shd])cudnn_(\w+)$", plain)
    if gm:  # implicit-GEMM convolution families: cudnn_infer_ampere_scudnn_128x64_relu_xregs_large_nn_v1
        k.category, k.functor = "matrix", "conv"
        k.arch = _ARCHS.get(gm.group(2)) or ("sm_" + gm.group(2)[2:] if gm.group(2).startswith("sm") else None)
        k.dtypes = [{"s": "float32", "h": "float16", "d": "float64"}[gm.group(3)]]
        k.template = f"{gm.group(3)}cudnn"
        k.op = "convolution (implicit GEMM)"
        rest = gm.group(4).split("_")
        tm = next((p for p in rest if re.fullmatch(r"\d+x\d+", p)), None)
        k.tile = tm
        k.tensor_cores = False
        k.tokens += [(3, "cudnn"), (3, "conv"), (1, tm or "")]
        _dt(k)
        k.tokens += [(0, p) for p in rest if p != tm and p != "v1"]
        if gm.group(1):
            k.tokens.append((0, gm.group(1)))
        return
    c = parse(plain)
    words = c.qualname.lower()
    rules = (("dot_do_o", "sdpa backward (dO.O)", "attention"), ("convert_dq", "sdpa backward (dQ)", "attention"),
             ("bn_fw_tr", "batch_norm forward (training)", "normalization"),
             ("bn_fw_inf", "batch_norm forward (inference)", "normalization"),
             ("bn_bw", "batch_norm backward", "normalization"), ("winograd", "conv (Winograd)", "matrix"),
             ("fft", "conv (FFT)", "matrix"), ("nchwtonhwc", "layout NCHW->NHWC", "memory"),
             ("nhwctonchw", "layout NHWC->NCHW", "memory"), ("dgrad", "conv dgrad", "matrix"),
             ("wgrad", "conv wgrad", "matrix"), ("convolve", "conv", "matrix"), ("scale", "scale", "elementwise"),
             ("offsets", "conv index precompute", "other"), ("pooling", "pooling", "other"),
             ("softmax", "softmax", "attention"), ("activation", "activation", "activation"))
    rule = next(((f, cat) for w, f, cat in rules if w in words), (c.base, "other"))
    k.functor, k.category = rule
    k.template = c.qualname
    k.op = f"{c.base}: {k.functor}" if k.functor != c.base else c.base
    k.dtypes = data_type(type_args(c.args))
    k.tokens += [(3, "cudnn"), (3, k.functor)]
    _dt(k)
    k.tokens += [(1, c.base if c.base != k.functor else ""), (0, values_token(c.args))]


# ------------------------------------------------------------------------------------------------ attention

def decode_attention(name: str, k: KernelInfo) -> None:
    """FlashAttention 2/3 (PyTorch's ``pytorch_flash::`` copy or Dao-AILab's), memory-efficient
    attention (``fmha_cutlassF/B``, xformers' kernels that PyTorch ships)."""
    k.family, k.category, k.tensor_cores = "flash-attn", "attention", True
    plain = name.strip()
    fm = re.match(r"fmha_cutlass([FB])_(\w+?)_(aligned|notaligned)_(\d+x\d+)(?:_k(\d+))?(?:_(rf|dropout|seqaligned)"
                  r")?(?:_\w+?)?_sm(\d+)", plain)
    if fm:
        k.library = "memory-efficient attention (CUTLASS, PyTorch SDPA / xformers)"
        k.functor = k.op = "attention " + ("forward" if fm.group(1) == "F" else "backward")
        k.template = "fmha_cutlass" + fm.group(1)
        k.dtypes = [code_dtype(fm.group(2)) or fm.group(2)]
        k.tile, k.arch = fm.group(4), "sm_" + fm.group(7)
        if fm.group(5):
            k.notes.append(f"head dim up to {fm.group(5)}")
        k.tokens += [(3, "mem-eff"), (3, "fwd" if fm.group(1) == "F" else "bwd"), (1, k.tile)]
        _dt(k)
        k.tokens += [(0, f"k{fm.group(5)}" if fm.group(5) else ""), (0, fm.group(6) or ""), (0, fm.group(3))]
        return
    c = parse(plain)
    fa3 = re.search(r"flash::(FlashAttn\w+?Sm(\d+))", c.text)
    lib = "FlashAttention-3" if fa3 else "FlashAttention-2 (PyTorch SDPA)" if "pytorch_flash" in plain else \
        "FlashAttention"
    k.library = lib
    base = fa3.group(1) if fa3 else c.base
    k.template = base
    direction = "backward" if "bwd" in base.lower() else "forward"
    k.functor = k.op = f"attention {direction}"
    k.arch = f"sm_{fa3.group(2)}" if fa3 else None
    tm = re.search(r"Flash_(?:fwd|bwd)_kernel_traits<(\d+), (\d+), (\d+), (\d+)", c.text)
    if tm:
        k.tile = f"{tm.group(2)}x{tm.group(3)}"
        k.warps = tm.group(4)
        k.notes.append(f"head dim {tm.group(1)}, block M {tm.group(2)}, block N {tm.group(3)}, {tm.group(4)} warps")
    k.dtypes = type_args(re.findall(r"cutlass::(?:bfloat16_t|half_t)|__nv_bfloat16|\bhalf\b", c.text)[:1])
    step = base.removeprefix("flash_").removesuffix("_kernel")
    k.tokens += [(3, "flash"), (3, step), (1, k.tile or "")]
    if tm:
        k.tokens.append((1, f"d{tm.group(1)}"))
    _dt(k)
    flags = value_args(c.args)
    if flags and base != c.base:
        flags = []
    k.tokens += [(0, "".join("T" if f == "true" else "F" if f == "false" else f for f in flags))] if flags else []
