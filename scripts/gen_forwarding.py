#!/usr/bin/env python3
"""Generate crates/backend/src/forward.rs: `Acc<B>` forwarding every op of Burn 0.21's op traits.

Usage: python3 scripts/gen_forwarding.py [--flex | --cube] [BURN_BACKEND_SRC_DIR]

With `--flex` it writes crates/fusion/src/cpu/forward.rs instead: `CpuFlex` (burnacc-fusion's
CPU backend, which shares Flex's primitive types) forwarding every op to Flex, without counters
or autocast; methods named in `FLEX_OVERRIDES` call `crate::cpu::overrides::<name>`, and those
named in `FLEX_DEFAULTS` are left out (Burn's default implementation runs on `CpuFlex`).
With `--cube` it writes crates/fusion/src/cube/forward.rs: `CubeAcc<R>` (burnacc-fusion's
CubeCL backend, which shares `CubeBackend`'s primitive types) forwarding every op to
`CubeBackend<R, f32, i32, u32>`, unchanged.

The input is burn-backend 0.21.0's `src/backend/ops` (found in the cargo registry when no path is
given). Every method of the seven op traits (FloatTensorOps, IntTensorOps, BoolTensorOps,
ModuleOps, ActivationOps, QTensorOps, TransactionOps) becomes one `op!` macro line that bumps the
op's counter and calls the inner backend. Methods named in `OVERRIDES` call
`crate::overrides::<name>` instead, where the hand-written version lives.

Autocast: the lists `LOWER_PRECISION_OPS` and `FLOAT32_OPS` of crates/amp/src/policy.rs name the
ops whose float inputs autocast casts to the autocast dtype or to f32; any other op with two or
more float inputs promotes them to the widest dtype. Such ops get an `op!` line that names the
policy and the float arguments (plain, optional, lists); `crate::autocast` does the casting.

Types that carry the backend parameter but are not plain primitives (`TensorPrimitive<B>`,
`MaxPool2dWithIndices<B>`, ...) are converted with the helpers in `crate::convert`.
Run it again only when the Burn version changes; the output is committed.
"""

import glob
import os
import re
import sys

TRAITS = [
    ("tensor.rs", "FloatTensorOps"),
    ("int_tensor.rs", "IntTensorOps"),
    ("bool_tensor.rs", "BoolTensorOps"),
    ("modules/base.rs", "ModuleOps"),
    ("activation.rs", "ActivationOps"),
    ("qtensor.rs", "QTensorOps"),
    ("transaction.rs", "TransactionOps"),
]

# Ops implemented by hand in crates/backend/src/overrides/ (same signature, same name).
OVERRIDES = {"layer_norm", "linear", "softmax"}

# Ops of `CpuFlex` implemented by hand in crates/fusion/src/cpu/overrides/ (`--flex`).
FLEX_OVERRIDES = {
    "float_add",
    "float_sub",
    "float_mul",
    "float_div",
    "float_matmul",
    "float_random",
    "float_zeros",
    "float_add_scalar",
    "float_sub_scalar",
    "float_mul_scalar",
    "float_div_scalar",
    "float_reshape",
    "float_empty",
    "gelu",
    "gelu_backward",
    "conv2d_x_backward",
    "conv2d_weight_backward",
    "linear_weight_backward",
    "linear_bias_backward",
}

# Ops `CpuFlex` leaves to Burn's default decomposition (`--flex`): no method is generated, so
# the trait's default runs on `CpuFlex`'s own ops instead of Flex's.
FLEX_DEFAULTS = {
    "linear",
    "linear_x_backward",
}

# Backend-parametrised wrapper types: how to move a value between `Acc<B>` and `B`.
# name -> (conversion of an argument into the inner type, conversion of a result out of it)
WRAPPED = {
    "TensorPrimitive": ("tp_in", "tp_out"),
    "QuantizationParametersPrimitive": ("qparams_in", None),
    "MaxPool1dWithIndices": (None, "max_pool1d_out"),
    "MaxPool2dWithIndices": (None, "max_pool2d_out"),
    "MaxPool1dBackward": (None, "max_pool1d_backward_out"),
    "MaxPool2dBackward": (None, "max_pool2d_backward_out"),
    "DeformConv2dBackward": (None, "deform_conv2d_backward_out"),
    "TransactionPrimitive": ("transaction_in", None),
}


def read_policy():
    """The two op lists of crates/amp/src/policy.rs."""
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "amp", "src", "policy.rs")
    text = open(path).read()
    lists = {}
    for name in ("LOWER_PRECISION_OPS", "FLOAT32_OPS"):
        m = re.search(r"pub const %s: &\[&str\] = &\[(.*?)\];" % name, text, re.S)
        if not m:
            sys.exit("%s not found in %s" % (name, path))
        lists[name] = re.findall(r'"(\w+)"', m.group(1))
    return lists


def float_args(args):
    """(plain, optional, list) float tensor arguments of an op."""
    plain = [a for a, t in args if t == "FloatTensor<B>"]
    opt = [a for a, t in args if t == "Option<FloatTensor<B>>"]
    vec = [a for a, t in args if t == "Vec<FloatTensor<B>>"]
    return plain, opt, vec


def find_src(args):
    if args:
        return args[0]
    home = os.path.expanduser("~/.cargo/registry/src")
    hits = glob.glob(os.path.join(home, "*", "burn-backend-0.21.0", "src", "backend", "ops"))
    if not hits:
        sys.exit("burn-backend-0.21.0 not in the cargo registry: run `cargo fetch` first")
    return hits[0]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*$", "", line) for line in text.splitlines())


def trait_body(text, trait):
    start = re.search(r"pub trait %s<B: Backend>\s*\{" % trait, text)
    if not start:
        sys.exit("trait %s not found" % trait)
    i = start.end()
    depth = 1
    j = i
    while depth:
        c = text[j]
        depth += {"{": 1, "}": -1}.get(c, 0)
        j += 1
    return text[i : j - 1]


def top_level_fns(body):
    """Yield the signature text (from `fn` up to the body or `;`) of each depth-0 fn."""
    depth = 0
    i = 0
    while i < len(body):
        c = body[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and body.startswith("fn ", i) and (i == 0 or not body[i - 1].isalnum()):
            j = i
            paren = 0
            while True:
                ch = body[j]
                if ch in "(<[":
                    paren += 1
                elif ch in ")>]" and body[j - 1] != "-":
                    paren -= 1
                elif paren == 0 and ch in "{;":
                    break
                j += 1
            yield " ".join(body[i:j].split())
            i = j
            continue
        i += 1


def split_top(s, sep=","):
    parts, depth, cur = [], 0, ""
    for k, ch in enumerate(s):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]" and s[k - 1] != "-":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse(sig):
    m = re.match(r"fn (\w+)\s*(<[^(]*>)?\s*\(", sig)
    if not m:
        sys.exit("cannot parse: " + sig)
    name, generics = m.groups()
    if generics:
        sys.exit("generic method not supported by the generator: " + sig)
    # Find the parenthesis closing the parameter list.
    depth, k = 1, m.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(sig[k], 0)
        k += 1
    params, rest = sig[m.end() : k - 1], sig[k:].strip()
    ret = rest[2:].strip() if rest.startswith("->") else ""
    args = []
    for p in split_top(params):
        pname, ptype = p.split(":", 1)
        args.append((pname.strip(), ptype.strip()))
    return name, args, ret


def to_self(ty):
    # Paths inside burn-backend (`crate::tensor::X`) are re-exported as `burn::tensor::X`.
    ty = ty.replace("crate::tensor::", "burn::tensor::")
    return re.sub(r"\bB\b", "Self", ty)


def wrapper_of(ty):
    for w in WRAPPED:
        if re.search(r"\b%s<B>" % w, ty):
            return w
    return None


def render(name, args, ret, index, policy):
    params = ", ".join("%s: %s" % (a, to_self(t)) for a, t in args)
    call_args = []
    for a, t in args:
        w = wrapper_of(t)
        if w:
            conv = WRAPPED[w][0]
            if conv is None or t != "%s<B>" % w:
                sys.exit("no input conversion for %s in %s" % (t, name))
            call_args.append("convert::%s(%s)" % (conv, a))
        else:
            call_args.append(a)
    target = "crate::overrides::%s::<B>" % name if name in OVERRIDES else "B::%s" % name
    call = "%s(%s)" % (target, ", ".join(call_args))
    w = wrapper_of(ret)
    if w and name not in OVERRIDES:
        conv = WRAPPED[w][1]
        if ret == "%s<B>" % w:
            call = "convert::%s(%s)" % (conv, call)
        elif re.fullmatch(r"\(\s*%s<B>\s*,\s*%s<B>\s*\)" % (w, w), ret):
            call = "{ let (a, b) = %s; (convert::%s(a), convert::%s(b)) }" % (call, conv, conv)
        else:
            sys.exit("no output conversion for %s in %s" % (ret, name))
    arrow = " -> %s" % to_self(ret) if ret else ""
    if ret.startswith("impl Future"):
        # The inner future already has the right output type; re-wrap so the signature matches.
        call = "%s" % call
    plain, opt, vec = float_args(args)
    if name in policy["LOWER_PRECISION_OPS"]:
        kind = "lower"
    elif name in policy["FLOAT32_OPS"]:
        kind = "float32"
    elif len(plain) + len(opt) + 2 * len(vec) >= 2:  # a list may hold several dtypes
        kind = "promote"
    else:
        return "    op!(%d, fn %s(%s)%s => %s);" % (index, name, params, arrow, call)
    casts = "%s[%s][%s][%s]" % (kind, ", ".join(plain), ", ".join(opt), ", ".join(vec))
    return "    op!(%d, %s, fn %s(%s)%s => %s);" % (index, casts, name, params, arrow, call)


# Wrapper types between backends that store the same tensors: the function of
# burnacc-fusion's `relabel` module that moves each one, in either direction.
RELABEL = {
    "TensorPrimitive": "tensor_primitive",
    "QuantizationParametersPrimitive": "qparams",
    "MaxPool1dWithIndices": "max_pool1d",
    "MaxPool2dWithIndices": "max_pool2d",
    "MaxPool1dBackward": "max_pool1d_backward",
    "MaxPool2dBackward": "max_pool2d_backward",
    "DeformConv2dBackward": "deform_conv2d_backward",
    "TransactionPrimitive": "transaction",
}


def render_wrapper(name, args, ret, target, overrides):
    """One forwarding method of a backend that shares its inner backend's primitive types: a
    plain call of `target::name` (or of `overrides::name`)."""
    params = ", ".join("%s: %s" % (a, to_self(t)) for a, t in args)
    call_args = []
    for a, t in args:
        w = wrapper_of(t)
        if w:
            if t != "%s<B>" % w:
                sys.exit("no input conversion for %s in %s" % (t, name))
            call_args.append("relabel::%s(%s)" % (RELABEL[w], a))
        else:
            call_args.append(a)
    target = "overrides::%s" % name if name in overrides else "%s::%s" % (target, name)
    call = "%s(%s)" % (target, ", ".join(call_args))
    w = wrapper_of(ret)
    if w and name not in overrides:
        conv = RELABEL[w]
        if ret == "%s<B>" % w:
            call = "relabel::%s(%s)" % (conv, call)
        elif re.fullmatch(r"\(\s*%s<B>\s*,\s*%s<B>\s*\)" % (w, w), ret):
            call = "{ let (a, b) = %s; (relabel::%s(a), relabel::%s(b)) }" % (call, conv, conv)
        else:
            sys.exit("no output conversion for %s in %s" % (ret, name))
    arrow = " -> %s" % to_self(ret) if ret else ""
    return "    fn %s(%s)%s { %s }" % (name, params, arrow, call)


OPS_IMPORTS = [
    "use burn::tensor::backend::{Backend, ExecutionError};",
    "use burn::tensor::ops::*;",
    "use burn::tensor::quantization::*;",
    "use burn::tensor::{",
    "    BoolDType, Distribution, FloatDType, IntDType, Scalar, Shape, Slice, TensorData,",
    "    TensorPrimitive,",
    "};",
    "use burn::tensor::ops::conv::*;",
    "use core::future::Future;",
    "use core::ops::Range;",
    "",
]


def write_wrapper(src, header, impl_line, target, overrides, defaults, dest):
    """Writes `dest`: `header`, then one impl block per op trait (`impl_line % trait`) whose
    methods call `target`'s op, `overrides`' instead where named, none for `defaults`."""
    out = list(header) + OPS_IMPORTS
    names = []
    for fname, trait in TRAITS:
        text = strip_comments(open(os.path.join(src, fname)).read())
        body = trait_body(text, trait)
        out.append(impl_line % trait)
        for sig in top_level_fns(body):
            name, args, ret = parse(sig)
            names.append(name)
            if name not in defaults:
                out.append(render_wrapper(name, args, ret, target, overrides))
        out.append("}")
        out.append("")
    missing = [n for n in overrides | defaults if n not in names]
    if missing:
        sys.exit("overrides or defaults that are not ops: %s" % missing)
    dest = os.path.join(os.path.dirname(__file__), "..", *dest)
    with open(dest, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s: %d ops" % (os.path.normpath(dest), len(names)))


def main_flex(src):
    header = [
        "// @generated by scripts/gen_forwarding.py --flex from burn-backend 0.21.0; do not edit by hand.",
        "//! Forwarding of every op of Burn 0.21's op traits from `CpuFlex` to Flex.",
        "//!",
        "//! `CpuFlex` shares Flex's primitive types, so each method is a plain call of Flex's op;",
        "//! the ops in `super::overrides` are burnacc's own (broadcasting element-wise ops,",
        "//! convolution backward, linear layers and matrix products, Bernoulli draws, GELU, ...).",
        "#![allow(unused_imports, clippy::too_many_arguments)]",
        "",
        "use super::{CpuFlex, overrides};",
        "use crate::relabel;",
        "use burn::backend::Flex;",
    ]
    write_wrapper(
        src, header, "impl %s<Self> for CpuFlex {", "Flex", FLEX_OVERRIDES, FLEX_DEFAULTS,
        ("crates", "fusion", "src", "cpu", "forward.rs"),
    )


def main_cube(src):
    header = [
        "// @generated by scripts/gen_forwarding.py --cube from burn-backend 0.21.0; do not edit by hand.",
        "//! Forwarding of every op of Burn 0.21's op traits from `CubeAcc<R>` to",
        "//! `CubeBackend<R, f32, i32, u32>`.",
        "//!",
        "//! `CubeAcc<R>` shares `CubeBackend`'s primitive types (`CubeTensor<R>`), so each method is",
        "//! a plain call of CubeCL's op.",
        "#![allow(unused_imports, clippy::too_many_arguments)]",
        "",
        "use super::{CubeAcc, CubeInner};",
        "use crate::relabel;",
        "use burn_cubecl::CubeRuntime;",
    ]
    write_wrapper(
        src, header, "impl<R: CubeRuntime> %s<Self> for CubeAcc<R> {", "CubeInner::<R>",
        set(), set(), ("crates", "fusion", "src", "cube", "forward.rs"),
    )


def main():
    args = sys.argv[1:]
    if args and args[0] == "--flex":
        main_flex(find_src(args[1:]))
        return
    if args and args[0] == "--cube":
        main_cube(find_src(args[1:]))
        return
    src = find_src(args)
    policy = read_policy()
    out = [
        "// @generated by scripts/gen_forwarding.py from burn-backend 0.21.0; do not edit by hand.",
        "//! Forwarding of every op of Burn 0.21's op traits from `Acc<B>` to `B`.",
        "//!",
        "//! Each line bumps the op's counter (see `counters`) and calls the inner backend (or the",
        "//! override in `crate::overrides`). Primitive types are shared with `B`, so a call costs",
        "//! one per-thread counter increment. Ops of the autocast policy (crates/amp/src/policy.rs)",
        "//! name their float arguments, which `crate::autocast` casts while autocast is on.",
        "#![allow(unused_imports, clippy::too_many_arguments)]",
        "",
        "use crate::{Acc, convert, op};",
    ] + OPS_IMPORTS
    names = []
    for fname, trait in TRAITS:
        text = strip_comments(open(os.path.join(src, fname)).read())
        body = trait_body(text, trait)
        out.append("impl<B: Backend> %s<Self> for Acc<B> {" % trait)
        for sig in top_level_fns(body):
            name, args, ret = parse(sig)
            out.append(render(name, args, ret, len(names), policy))
            names.append(name)
        out.append("}")
        out.append("")
    unknown = [n for lst in policy.values() for n in lst if n not in names]
    if unknown:
        sys.exit("policy names that are not ops: %s" % unknown)
    out.append("/// Number of forwarded ops (one counter each).")
    out.append("pub const OP_COUNT: usize = %d;" % len(names))
    out.append("")
    out.append("/// Name of each forwarded op, indexed like its counter.")
    out.append("pub const OP_NAMES: [&str; OP_COUNT] = [")
    for n in names:
        out.append('    "%s",' % n)
    out.append("];")
    dest = os.path.join(os.path.dirname(__file__), "..", "crates", "backend", "src", "forward.rs")
    with open(dest, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s: %d ops" % (os.path.normpath(dest), len(names)))


if __name__ == "__main__":
    main()
