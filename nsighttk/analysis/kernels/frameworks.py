"""Decoders for framework-generated kernels: PyTorch's ATen templates (elementwise, reduce,
foreach, index, scatter/gather, softmax, layer norm, cat, random numbers), Triton and
``torch.compile`` (Inductor) kernels, and plain CUDA kernels of other libraries or the user.

ATen's templates carry what they compute in a template argument: a functor struct
(``CUDAFunctor_add<c10::BFloat16>``, ``BinaryFunctor<..., MulFunctor<float>>``), or a lambda
defined inside the dispatching function (``direct_copy_kernel_cuda(...)::lambda(c10::BFloat16)``,
``bfloat16_copy_kernel_cuda(...)::lambda(float)``); the functor names and wrappers below are
those of ``aten/src/ATen/native/cuda`` (CUDALoops.cuh, Reduce.cuh, ForeachFunctors.cuh,
fused_adam_utils.cuh, ScatterGatherKernel.cu)."""

from __future__ import annotations

import re

from nsighttk.analysis.kernels.info import (
    CxxName,
    KernelInfo,
    category_from_words,
    cxx_dtype,
    data_type,
    kernel_category,
    parse,
    short_dtype,
    split_args,
    type_args,
    value_args,
    values_token,
)

#: Templates whose argument says the work, and which argument: (index, family word, variant).
_ELEMENTWISE = {"vectorized_elementwise_kernel": 1, "unrolled_elementwise_kernel": 0, "elementwise_kernel": 2,
                "elementwise_kernel_with_index": 1, "index_elementwise_kernel": 2,
                "distribution_elementwise_grid_stride_kernel": 2, "_scatter_gather_elementwise_kernel": 2,
                "reduce_kernel": 2, "multi_tensor_apply_kernel": 1}
#: Wrappers that are not the work itself.
_WRAPPERS = {"lambda", "operator", "gpu_kernel_impl", "gpu_kernel_impl_nocast", "gpu_kernel", "gpu_index_kernel",
             "launch_legacy_kernel", "func_wrapper_t", "decltype", "sizeof", "gpu_kernel_with_scalars",
             "opmath_gpu_kernel_with_scalars", "opmath_symmetric_gpu_kernel_with_scalars"}
_STRUCT_WRAPPERS = {"AUnary", "BUnary", "Unary", "Binary", "CUDA", "Ternary"}
_MEMORY = re.compile(r"^(?:fill|direct_copy|copy|\w+_copy|masked_fill|cat|index_copy|zero)$")
_ACTIVATION = re.compile(r"^(?:gelu|relu|silu|tanh|sigmoid|threshold|hardtanh|elu|leaky_relu|softplus|mish|"
                         r"hardswish|hardsigmoid|glu|log_sigmoid|prelu)(?:_backward)?$")
_STD_OPS = {"plus": "add", "minus": "sub", "multiplies": "mul", "divides": "div", "negate": "neg",
            "maximum": "maximum", "minimum": "minimum"}


def snake(word: str) -> str:
    """``GeluCUDAKernelImpl`` -> ``gelu_cuda_kernel_impl``; ``CompareEq`` -> ``compare_eq``."""
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", word)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def op_name(function: str) -> str:
    """The op a dispatching function implements: ``direct_copy_kernel_cuda`` -> ``direct_copy``,
    ``GeluCUDAKernelImpl`` -> ``gelu``, ``launch_clamp_scalar`` -> ``clamp_scalar``."""
    s = snake(function).strip("_")
    s = s.removeprefix("launch_")
    changed = True
    while changed:
        before = s
        for suffix in ("_cuda_kernel_impl", "_kernel_cuda", "_cuda_kernel", "_kernel_impl", "_kernel", "_impl",
                       "_cuda", "_out", "_and_transform", "_template", "_functor"):
            s = s.removesuffix(suffix)
        changed = s != before
    return s.strip("_") or function


def _function_op(payload: str) -> tuple[str, int] | None:
    """The first dispatching function a lambda was defined in (``where_kernel_impl(...)::lambda``),
    and where its call parentheses start."""
    for m in re.finditer(r"(?=\b(\w+)(?:<[^()]{0,300}>)?\()", payload):
        fn = m.group(1)
        if fn not in _WRAPPERS and "Functor" not in fn and not fn[0].isdigit():
            return fn, payload.index("(", m.start() + len(fn))
    return None


def _struct_functor(payload: str) -> tuple[str, str] | None:
    """The innermost functor struct: (op, its first template argument)."""
    found = None
    for m in re.finditer(r"\b(\w*?)Functor(OnSelf|OnOther)?(?:_(\w+?))?(?:<([^<>,]*))?[<,>\s]", payload + " "):
        if m.group(1) in _STRUCT_WRAPPERS and not m.group(3):
            continue
        found = (m.group(3) if m.group(1) == "CUDA" else snake(m.group(1)), (m.group(4) or "").strip())
    return found


def _chain_dtype(payload: str, at: int) -> str | None:
    """The element type of the lambda chain ``f(...)::lambda()::operator()() const::lambda(float)``
    whose call parentheses start at ``payload[at]``: the last parameter of its last lambda."""
    depth, i = 0, at
    for i in range(at, len(payload)):
        depth += payload[i] in "(<[{"
        depth -= payload[i] in ")>]}"
        if depth == 0:
            break
    rest, dtype = payload[i + 1:], None
    while True:
        m = re.match(r"::lambda\(([^()]*)\)|::operator\(\)\(\)(?: const)?", rest)
        if not m:
            return dtype
        if m.group(1):  # the data operands: the last non-bool parameter (where: (bool, T, T); masked_scale: (T, bool))
            types = [t for t in (cxx_dtype(a) for a in split_args(m.group(1))) if t]
            dtype = next((t for t in reversed(types) if t != "bool"), types[-1] if types else None) or dtype
        rest = rest[m.end():]


def _elementwise_work(payload: str) -> tuple[str | None, str | None]:
    """(functor, dtype) of an elementwise or reduction payload."""
    fn = _function_op(payload)
    if fn:
        return op_name(fn[0]), _chain_dtype(payload, fn[1])
    sf = _struct_functor(payload)
    if sf:  # the tensors' type: the wrapper's first argument (MulFunctor<float> computes bf16 tensors in float)
        wrap = re.search(r"\b(?:AUnary|BUnary|Unary|Binary)Functor<([^<>,]+)", payload)
        return sf[0], cxx_dtype(wrap.group(1) if wrap else sf[1])
    ops = re.findall(r"\b(\w+?)Ops<", payload)
    if ops:
        return snake(ops[-1]), None
    m = re.search(r"\b(\w+?)_functor<([^<>,]+)", payload)
    if m:
        return m.group(1), cxx_dtype(m.group(2))
    return None, None


def _foreach(c: CxxName, k: KernelInfo) -> None:
    """``multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<float, 2, 2, 0>,
    std::plus<float>, float>``; the fused optimizers (``FusedAdamMathFunctor<float, 4, ADAM_MODE::ADAMW,
    false>``); apex's ``AdamFunctor<float>``."""
    args = c.args[1:]
    functor = next((a for a in args if re.search(r"Functor\w*<|Functor\w*$", a)), "")
    fm = re.search(r"(\w+?)Functor(MP)?\b(?:<([^<>]*))?", functor)
    name, targs = (fm.group(1), split_args(fm.group(3) or "")) if fm else ("", [])
    dt = cxx_dtype(targs[0]) if targs else None
    opt = re.fullmatch(r"Fused(\w+?)Math", name)
    if opt:
        work = "fused_" + opt.group(1).lower()
        mode = next((a for a in targs if "ADAM_MODE" in a), "")
        if re.search(r"ADAMW|ADAM_MODE\)1", mode):
            work = "fused_adamw"
        if targs and targs[-1] == "true":
            work += "_amsgrad"
        if fm and fm.group(2):
            work += " (mixed precision)"
        k.notes.append("one kernel updates every parameter of the optimizer step (fused optimizer)")
    elif not c.qualname.startswith("at::"):  # NVIDIA Apex's multi_tensor_apply (AdamFunctor, LAMBStage1Functor...)
        work = snake(name)
        k.library = "Apex"
    else:
        op = None
        after = args[args.index(functor) + 1:] if functor in args else []
        for a in after:
            sm = re.match(r"std::(\w+)<", a)
            if sm:
                op = _STD_OPS.get(sm.group(1), sm.group(1))
                break
            fn = _function_op(a)
            if fn:
                op = op_name(fn[0])
                break
            wm = re.match(r"(?:\w+::)*([A-Z]\w*?)(?:<|$)", a)
            if wm:
                op = op_name(wm.group(1).removesuffix("Functor"))
                break
        pattern = re.fullmatch(r"(Binary|Unary|Pointwise|Ternary)Op(Scalar|List|ScalarList|ScalarTensor|"
                               r"ListAlpha)?", name)
        if pattern and pattern.group(1) == "Pointwise":
            op = {"mul": "addcmul", "div": "addcdiv"}.get(op or "", op)
        suffix = {"Scalar": ".Scalar", "List": ".List", "ListAlpha": ".List", "ScalarList": ".ScalarList",
                  "ScalarTensor": ".Tensor"}.get(pattern.group(2) or "", "") if pattern else ""
        work = f"{op or snake(name) or 'foreach'}{suffix}"
    k.functor, k.dtypes = work, [dt] if dt else []
    k.category = "elementwise"
    k.tokens += [(3, "foreach"), (3, work)]


def _scatter_gather(c: CxxName, k: KernelInfo) -> None:
    m = re.search(r"_cuda_scatter_gather_internal_kernel<(true|false), (.+?)>::operator\(\)<(?:\w+::)*(\w+)>",
                  c.text)
    if not m:
        k.functor = "scatter_gather"
        return
    reduce = {"TensorAssign": "", "ReduceAdd": "_add", "ReduceMultiply": "_mul", "ReduceMean": "_mean",
              "ReduceMaximum": "_amax", "ReduceMinimum": "_amin"}.get(m.group(3), "_" + snake(m.group(3)))
    k.functor = ("scatter" if m.group(1) == "true" else "gather") + reduce
    dt = cxx_dtype(m.group(2))
    k.dtypes = [dt] if dt else []


def decode_aten(name: str, k: KernelInfo) -> None:
    k.family, k.library = "aten", "PyTorch (ATen)"
    c = parse(name)
    k.template = c.base
    idx = _ELEMENTWISE.get(c.base)
    if idx is not None and len(c.args) > idx:
        payload = ", ".join(c.args[idx:])
        group = "elementwise"
        if c.base == "multi_tensor_apply_kernel":
            _foreach(c, k)
            group = "foreach"
        elif c.base == "_scatter_gather_elementwise_kernel":
            _scatter_gather(c, k)
            k.category, group = "memory", "scatter" if k.functor and k.functor.startswith("scatter") else "gather"
            k.tokens.append((3, k.functor or "scatter_gather"))
        else:
            functor, dt = _elementwise_work(payload)
            k.functor = functor
            if c.base == "elementwise_kernel_with_index":
                dt = None  # the lambda's parameter is the element index
            elif c.base == "index_elementwise_kernel":  # lambdas take (char*, char*, offset): the type is OpaqueType<N>
                om = re.search(r"(?:\w+::)*OpaqueType<\d+>", payload)
                dt = cxx_dtype(om.group(0)) if om else None
            elif c.base == "reduce_kernel":
                rm = re.match(r"(?:\w+::)*ReduceOp<([^<>,]+)", c.args[2])
                dt = cxx_dtype(rm.group(1)) if rm else dt
            k.dtypes = [dt] if dt else []
            cast = re.fullmatch(r"(bfloat16|float16|half|float8\w*|float)_copy", functor or "")
            if cast and dt:
                out = cxx_dtype(cast.group(1)) or {"bfloat16": "bfloat16", "float16": "float16"}.get(cast.group(1))
                if out and out != dt:
                    k.dtypes.append(out)
            if c.base == "reduce_kernel":
                group, k.category = "reduce", "reduction"
            elif c.base == "index_elementwise_kernel":
                group, k.category = "index", "memory"
            elif c.base == "distribution_elementwise_grid_stride_kernel":
                group, k.category = "random", "elementwise"
            elif functor and _MEMORY.match(functor):
                k.category = "memory"
            elif functor and _ACTIVATION.match(functor):
                k.category = "activation"
            else:
                k.category = "elementwise"
            if group != "foreach":
                k.tokens += [(3, group), (3, functor or c.base)]
        k.op = f"{c.base}: {k.functor}" if k.functor else c.base
        _dtype_token(k)
        operand = re.search(r"\b([AB])UnaryFunctor<|CUDAFunctorOn(Self|Other)_", payload)
        if operand:  # one operand is a CPU scalar: AUnary / OnOther (the first), BUnary / OnSelf (the second)
            first = operand.group(1) == "A" or operand.group(2) == "Other"
            k.tokens.append((1, "scalar-a" if first else "scalar-b"))
        nums = value_args(c.args[:idx])
        if c.base == "vectorized_elementwise_kernel" and nums:
            k.vector_width = int(nums[0])
            k.tokens.append((1, f"vec{nums[0]}"))
        elif c.base == "unrolled_elementwise_kernel":
            k.tokens.append((1, "unrolled"))
        elif c.base in ("elementwise_kernel", "reduce_kernel", "index_elementwise_kernel",
                        "_scatter_gather_elementwise_kernel") and len(nums) >= 2:
            what = "elements" if c.base != "reduce_kernel" else "outputs"
            k.notes.append(f"{nums[0]} threads per block, {nums[1]} {what} per thread"
                           + (" (non-contiguous or type-casting inputs take this path)"
                              if c.base == "elementwise_kernel" else ""))
            k.tokens.append((1, f"{nums[0]}x{nums[1]}"))
        if "nocast" in payload and c.base == "elementwise_kernel":
            k.tokens.append((0, "nocast"))
        return
    _decode_aten_named(c, k)


def _dtype_token(k: KernelInfo) -> None:
    if k.dtypes:
        if k.family == "user" and len(k.dtypes) > 1:  # several types from nested template arguments
            k.tokens.append((2, "<" + ",".join(short_dtype(d) for d in k.dtypes) + ">"))
            return
        first, last = short_dtype(k.dtypes[0]), short_dtype(k.dtypes[-1])
        k.tokens.append((2, f"<{first}>" if first == last else f"<{first}->{last}>"))


def nested_types(args: list[str]) -> list[str]:
    """Element types given one level down (``cub::DeviceScanKernel<AgentScanPolicy<128, 15, long, ...>``,
    ``DeviceRadixSortPolicy<long, float, int>``), at most three, in order."""
    found: list[str] = []
    for a in args:
        lt = a.find("<")
        if lt > 0:
            found += type_args(split_args(a[lt + 1:a.rfind(">")]))
    return list(dict.fromkeys(found))[:3]


#: ATen kernels named after what they do, by base name: (functor, category).
_NAMED = (
    (re.compile(r"^(?:vectorized_)?layer_norm_kernel$|^LayerNormForwardCUDAKernel$"), "layer_norm", "normalization"),
    (re.compile(r"^RowwiseMomentsCUDAKernel$"), "layer_norm (mean/rstd)", "normalization"),
    (re.compile(r"^(?:GammaBetaBackward\w*|ComputeInternalGradients\w*|ComputeGradientFusedParams\w*)$"),
     "layer_norm backward (weight)", "normalization"),
    (re.compile(r"^(?:layer_norm_grad_input_kernel\w*|LayerNormBackward\w*)$"), "layer_norm backward (input)",
     "normalization"),
    (re.compile(r"^CatArrayBatchedCopy"), "cat", "memory"),
    (re.compile(r"^indexSelect(?:Large|Small)Index$"), "index_select", "memory"),
    (re.compile(r"^indexFunc(?:Large|Small)Index$"), "index_add", "memory"),
    (re.compile(r"^vectorized_gather_kernel$"), "gather (index_select)", "memory"),
    (re.compile(r"^embedding_backward\w*|^compute_grad_weight\w*|^sum_and_scatter\w*|^krn_partial\w*"),
     "embedding backward", "embedding"),
    (re.compile(r"^fused_dropout_kernel\w*"), "dropout", "elementwise"),
    (re.compile(r"^(?:batch_norm|bn)_\w+"), "batch_norm", "normalization"),
)


def _decode_aten_named(c: CxxName, k: KernelInfo) -> None:
    base = c.base
    sm = re.match(r"^(?:cunn_)?(Log)?SoftMax(Forward|Backward)\w*$|^softmax_warp_(forward|backward)$", base)
    dt_args = type_args(c.args)
    if sm:
        if sm.group(3):  # softmax_warp_forward<input_t, output_t, acc_t, log2_elements, is_log_softmax, ...>
            vals = value_args(c.args)
            log = len(vals) > 1 and vals[1] == "true"
            k.functor = ("log_softmax" if log else "softmax") + ("_backward" if sm.group(3) == "backward" else "")
            if vals:
                k.notes.append(f"rows of up to {2 ** int(vals[0])} elements, one warp per row")
        else:
            log = bool(sm.group(1)) or "LogSoftMax" in c.text
            k.functor = ("log_softmax" if log else "softmax") + ("_backward" if sm.group(2) == "Backward" else "")
        k.category = "attention"
    else:
        rule = next(((f, cat) for rx, f, cat in _NAMED if rx.search(base)), None)
        if rule:
            k.functor, k.category = rule
            if k.functor == "index_add":
                red = re.search(r"(Reduce\w+)>?\(", c.text) or re.search(r"\b(Reduce\w+)\b", ", ".join(c.args))
                if red and red.group(1) != "ReduceAdd":
                    k.functor = "index_reduce_" + snake(red.group(1).removeprefix("Reduce"))
        else:
            k.functor = op_name(base)
            k.category = kernel_category(base)
            if k.category in ("other", "elementwise"):
                k.category = category_from_words(k.functor) if "normal" not in base else "elementwise"
    k.dtypes = dt_args[:1]
    k.op = f"{base}: {k.functor}" if k.functor != base else base
    k.tokens.append((3, k.functor or base))
    _dtype_token(k)
    if k.functor != base and k.functor != op_name(base):
        k.tokens.append((0, base))
    if sm and sm.group(3) and value_args(c.args):
        k.tokens.append((0, f"n<={2 ** int(value_args(c.args)[0])}"))
    else:
        k.tokens.append((0, values_token(c.args)))


# ------------------------------------------------------------------------------------------------ Triton, others

_INDUCTOR = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template (GEMM/conv)",
             "for": "foreach"}


def decode_triton(name: str, k: KernelInfo) -> None:
    """``triton_poi_fused_add_mul_tanh_0`` (Inductor), ``triton__0d1d2d`` (Inductor before 2.1: the
    suffix only lists argument properties, no ops)."""
    k.family, k.library = "inductor", "torch.compile (Inductor, Triton)"
    k.tokens.append((3, name))
    m = re.match(r"triton_(poi|red|per|tem|for)_(fused_)?(\w+?)(?:_\d+)?$", name)
    if not m:
        k.notes.append("Inductor kernel named by its argument signature (PyTorch < 2.1): the name does not say "
                       "which ops it fuses")
        k.functor = "fused"
        return
    kind = _INDUCTOR[m.group(1)]
    ops = m.group(3).split("_")
    k.functor = " ".join(ops)
    k.template = f"triton_{m.group(1)}"
    k.op = f"{kind}: {' '.join(ops)}"
    k.category = {"pointwise": "elementwise", "reduction": "reduction", "persistent reduction": "reduction",
                  "template (GEMM/conv)": "matrix", "foreach": "elementwise"}[kind]
    if m.group(2):
        k.notes.append(f"fused: {len(ops)} op(s) in one kernel")


_NAMESPACE_LIBRARIES = {"cub": "CUB", "at_cuda_detail": "CUB (PyTorch's copy)", "thrust": "Thrust",
                        "fbgemm_gpu": "FBGEMM-GPU", "flashinfer": "FlashInfer", "vllm": "vLLM", "sglang": "SGLang",
                        "apex": "Apex", "transformer_engine": "Transformer Engine", "deep_gemm": "DeepGEMM",
                        "marlin_moe_wna16": "Marlin", "cutlass": "CUTLASS", "cute": "CUTLASS (CuTe)",
                        "tensorrt_llm": "TensorRT-LLM", "xformers": "xformers"}


def decode_plain(name: str, k: KernelInfo) -> None:
    """Any other kernel: a user's, or a library without a grammar of its own (its namespace names it)."""
    c = parse(name)
    top = c.qualname.split("::")[0] if "::" in c.qualname else ""
    k.template = c.qualname
    if not c.params and not c.args and re.fullmatch(r"_?\w+", c.base) and "::" not in c.qualname:
        k.family, k.library = "triton", "Triton (user kernel) or a plain CUDA kernel"
        k.functor = c.base.lstrip("_").removesuffix("_kernel") or c.base
    else:
        k.family = "user"
        k.library = _NAMESPACE_LIBRARIES.get(top, top or "user CUDA")
        k.functor = c.base
        om = re.search(r"(?:::|\b)(\w+?)Op>", c.text)
        if om:
            k.functor = f"{c.base}: {om.group(1)}"
    k.op = k.functor
    k.category = kernel_category(c.base)
    if k.category in ("other", "elementwise"):
        k.category = category_from_words(k.functor or c.base)
    policy = bool(c.args) and "<" in c.args[0]  # cub's kernels: the element types are in the policy argument
    k.dtypes = (nested_types(c.args[:1]) if policy else []) or data_type(type_args(c.args)) or [
        t for t in data_type(type_args(split_args(c.params))) if t.startswith(("float", "bfloat"))]
    if top:
        k.tokens.append((1, top))
    k.tokens.append((3, k.functor or c.base))
    _dtype_token(k)
    k.tokens.append((0, values_token(c.args)))
