#!/usr/bin/env python3
"""einlang against onnxruntime and numpy on the same machine, in one run.

Runs `cargo bench --bench conv`, `--bench kernels` and `--bench products` (release),
reads einlang's median times from their summaries, then times the same
shapes with onnxruntime (one graph per kernel, `intra_op_num_threads` set
to the machine's cores) and with numpy, and prints the ratios.

    python3 benches/python/compare_onnx.py            # everything (installs
                                                      # onnxruntime, onnx and numpy
                                                      # with pip when missing)
    python3 benches/python/compare_onnx.py --no-cargo # onnxruntime and numpy only
    python3 benches/python/compare_onnx.py --only products --rounds 3
                                                      # the product-shaped cases (benches/products.rs)
    python3 benches/python/compare_onnx.py --only sin --rounds 3
                                                      # alternate einlang and onnxruntime
                                                      # three times, print ranges

Every result is checked against numpy before it is timed.
"""

import argparse
import os
import re
import subprocess
import sys
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError:
    # Installs what it needs, as a newcomer would by hand.
    print("installing onnxruntime, onnx and numpy (pip)", file=sys.stderr)
    if subprocess.call([sys.executable, "-m", "pip", "install", "-q", "onnxruntime", "onnx", "numpy"]) != 0:
        sys.exit("needs onnxruntime and onnx: pip install onnxruntime onnx numpy")
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORES = os.cpu_count() or 1


# The peak the products bench measured in this run (its `peak: measured X
# GFLOP/s` line: every thread running chains of fused multiply-adds), when
# it ran.
MEASURED_PEAK = []


def peak_gflops():
    """The machine's peak f32 rate: the one the products bench measured in
    this run (`benches/common`'s `peak_gflops`), else the nominal cores x
    clock (the model name's `@ x.xxGHz`) x 2 FMA ports x f32 lanes (16 with
    AVX-512, 8 with AVX2) x 2. None where neither is known."""
    if MEASURED_PEAK:
        return max(MEASURED_PEAK)
    try:
        info = open("/proc/cpuinfo").read()
    except OSError:
        return None
    m = re.search(r"model name.*@\s*([0-9.]+)GHz", info)
    if not m:
        return None
    flags = re.search(r"^flags\s*:(.*)$", info, re.M)
    flags = flags.group(1).split() if flags else []
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    return CORES * float(m.group(1)) * 2 * lanes * 2


def median_ms(f, runs=15):
    # Three untimed calls: with one, the first case of each shape ran at
    # up to twice the time of the same session timed again right after
    # (the allocator settling on its output's memory, the thread pool
    # waking).
    for _ in range(3):
        f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1e3


def session(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = CORES
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def conv_numpy(x, k, b, pad):
    """im2col + one product per image, as the Rust baseline does."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, w = x.shape
    o, _, kh, kw = k.shape
    oh, ow = h - kh + 1, w - kw + 1
    km = k.reshape(o, c * kh * kw)
    out = np.empty((n, o, oh, ow), dtype=np.float32)
    for i in range(n):
        cols = np.empty((c, kh, kw, oh, ow), dtype=np.float32)
        for r in range(kh):
            for s in range(kw):
                cols[:, r, s] = x[i, :, r : r + oh, s : s + ow]
        out[i] = (km @ cols.reshape(c * kh * kw, oh * ow)).reshape(o, oh, ow) + b[:, None, None]
    return out


def softmax_numpy(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cases():
    rng = np.random.default_rng(7)
    out = []

    # Convolutions: N=8 C=32 32x32 O=64 3x3, valid + bias and padded; the
    # issue's N=8 C=64 56x56 O=64 3x3 the same two ways (the padded one
    # without a bias, as the conv bench's `conv_same`).
    for c, h in [(32, 32), (64, 56)]:
        x = rng.standard_normal((8, c, h, h), dtype=np.float32)
        k = rng.standard_normal((64, c, 3, 3), dtype=np.float32) * 0.1
        b = rng.standard_normal(64, dtype=np.float32)
        for label, pad in [(f"conv N=8 C={c} {h}x{h} O=64 3x3 valid + bias", 0), (f"conv N=8 C={c} {h}x{h} O=64 3x3 padded (guard)", 1)]:
            oh = h - 2 + 2 * pad
            s = session(
                [helper.make_node("Conv", ["x", "k", "b"], ["y"], pads=[pad] * 4)],
                [f32("x", x.shape), f32("k", k.shape), f32("b", b.shape)],
                [f32("y", (8, 64, oh, oh))],
            )
            feeds = {"x": x, "k": k, "b": b}
            want = conv_numpy(x, k, b, pad)
            got = s.run(None, feeds)[0]
            assert np.allclose(got, want, rtol=1e-3, atol=1e-3), label
            flops = 2 * 8 * 64 * oh * oh * c * 9
            out.append(
                (label, flops, lambda s=s, feeds=feeds: s.run(None, feeds), lambda x=x, k=k, b=b, pad=pad: conv_numpy(x, k, b, pad))
            )
        # Stride 2, padding 1, a bias (ONNX's `strides=[2, 2], pads=[1] * 4`)
        # on the shape: einlang's literal stride (`conv_s2`) and
        # `std::ml::conv2d` with a run-time stride of 2, both against the
        # same session. The numpy side is the stride-1 result subsampled.
        if h == 56:
            oh = (h + 2 - 3) // 2 + 1
            s = session(
                [helper.make_node("Conv", ["x", "k", "b"], ["y"], pads=[1] * 4, strides=[2, 2])],
                [f32("x", x.shape), f32("k", k.shape), f32("b", b.shape)],
                [f32("y", (8, 64, oh, oh))],
            )
            feeds = {"x": x, "k": k, "b": b}
            strided = lambda x=x, k=k, b=b: conv_numpy(x, k, b, 1)[:, :, ::2, ::2]
            assert np.allclose(s.run(None, feeds)[0], strided(), rtol=1e-3, atol=1e-3), "stride 2"
            flops = 2 * 8 * 64 * oh * oh * c * 9
            for label in [f"conv N=8 C={c} {h}x{h} O=64 3x3 stride 2, pad 1 + bias", f"std::ml::conv2d N=8 C={c} {h}x{h} O=64 3x3 stride 2, pad 1, bias"]:
                out.append((label, flops, lambda s=s, feeds=feeds: s.run(None, feeds), strided))
    # The grouped cases below use the first shape.
    x = rng.standard_normal((8, 32, 32, 32), dtype=np.float32)
    b = rng.standard_normal(64, dtype=np.float32)

    # Grouped: 4 groups of 8 channels and 16 filters, the input channel
    # computed from the output channel (einlang's `conv_grouped_computed`,
    # valid, no bias; `std::ml::conv` with group 4, padding 1, a bias).
    groups = 4
    kg = rng.standard_normal((64, 32 // groups, 3, 3), dtype=np.float32) * 0.1

    def grouped_numpy(x, k, b, pad):
        return np.concatenate(
            [conv_numpy(x[:, g * 8 : (g + 1) * 8], k[g * 16 : (g + 1) * 16], b[g * 16 : (g + 1) * 16], pad) for g in range(groups)],
            axis=1,
        )

    for label, pad, bias in [
        ("conv N=8 C=32 32x32 O=64 3x3 in 4 groups, channel from o", 0, False),
        ("std::ml::conv N=8 C=32 32x32 O=64 3x3 group 4, pad 1, bias", 1, True),
    ]:
        oh = 32 - 2 + 2 * pad
        names = ["x", "k", "b"] if bias else ["x", "k"]
        bb = b if bias else np.zeros(64, dtype=np.float32)
        s = session(
            [helper.make_node("Conv", names, ["y"], pads=[pad] * 4, group=groups)],
            [f32("x", x.shape), f32("k", kg.shape)] + ([f32("b", b.shape)] if bias else []),
            [f32("y", (8, 64, oh, oh))],
        )
        feeds = {"x": x, "k": kg, **({"b": b} if bias else {})}
        want = grouped_numpy(x, kg, bb, pad)
        assert np.allclose(s.run(None, feeds)[0], want, rtol=1e-3, atol=1e-3), label
        flops = 2 * 8 * 64 * oh * oh * (32 // groups) * 9
        out.append((label, flops, lambda s=s, feeds=feeds: s.run(None, feeds), lambda pad=pad, bb=bb: grouped_numpy(x, kg, bb, pad)))

    # `std::ml::conv` with run-time stride, pad and group (the conv bench's
    # `onnx_cases`): padding 1 and a bias, groups 1 and 4 and depthwise,
    # strides 1 and 2. The numpy side is the stride-1 result per group,
    # subsampled.
    for c, h, groups in [(32, 32, 1), (32, 32, 4), (64, 56, 1), (64, 56, 4), (64, 56, 64)]:
        x = rng.standard_normal((8, c, h, h), dtype=np.float32)
        k = rng.standard_normal((64, c // groups, 3, 3), dtype=np.float32) * 0.1
        b = rng.standard_normal(64, dtype=np.float32)
        cg, fg = c // groups, 64 // groups

        def per_group(x=x, k=k, b=b, cg=cg, fg=fg, groups=groups):
            return np.concatenate(
                [conv_numpy(x[:, g * cg : (g + 1) * cg], k[g * fg : (g + 1) * fg], b[g * fg : (g + 1) * fg], 1) for g in range(groups)],
                axis=1,
            )

        which = f"group {groups} (depthwise)" if groups == c else f"group {groups}"
        for stride in [1, 2]:
            oh = (h + 2 - 3) // stride + 1
            s = session(
                [helper.make_node("Conv", ["x", "k", "b"], ["y"], pads=[1] * 4, strides=[stride] * 2, group=groups)],
                [f32("x", x.shape), f32("k", k.shape), f32("b", b.shape)],
                [f32("y", (8, 64, oh, oh))],
            )
            feeds = {"x": x, "k": k, "b": b}
            want = lambda per_group=per_group, stride=stride: per_group()[:, :, ::stride, ::stride]
            assert np.allclose(s.run(None, feeds)[0], want(), rtol=1e-3, atol=1e-3), (c, groups, stride)
            flops = 2 * 8 * 64 * oh * oh * cg * 9
            label = f"std::ml::conv N=8 C={c} {h}x{h} O=64 3x3 {which}, stride {stride}, pad 1, bias"
            out.append((label, flops, lambda s=s, feeds=feeds: s.run(None, feeds), want))

    # Channels last (the conv_layouts bench): the image `[n, h, w, c]`, the
    # filters `[r, s, c, o]`, the result `[n, i, j, o]`. ONNX's `Conv` takes
    # channels first, so its graph is `Transpose`, `Conv`, `Transpose`, with
    # the filters given in its own layout.
    for c, h in [(64, 56), (32, 32)]:
        x = rng.standard_normal((8, h, h, c), dtype=np.float32)
        k = rng.standard_normal((64, c, 3, 3), dtype=np.float32) * 0.1
        b = rng.standard_normal(64, dtype=np.float32)
        xf = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        for what, pad, stride, relu in [("valid + bias", 0, 1, False), ("padded (guard) + bias + ReLU", 1, 1, True), ("stride 2, pad 1 + bias", 1, 2, False)]:
            oh = (h + 2 * pad - 3) // stride + 1
            nodes = [
                helper.make_node("Transpose", ["x"], ["xf"], perm=[0, 3, 1, 2]),
                helper.make_node("Conv", ["xf", "k", "b"], ["yf"], pads=[pad] * 4, strides=[stride] * 2),
            ]
            if relu:
                nodes.append(helper.make_node("Relu", ["yf"], ["yr"]))
            nodes.append(helper.make_node("Transpose", ["yr" if relu else "yf"], ["y"], perm=[0, 2, 3, 1]))
            s = session(nodes, [f32("x", x.shape), f32("k", k.shape), f32("b", b.shape)], [f32("y", (8, oh, oh, 64))])
            feeds = {"x": x, "k": k, "b": b}

            def want(xf=xf, k=k, b=b, pad=pad, stride=stride, relu=relu):
                y = conv_numpy(xf, k, b, pad)[:, :, ::stride, ::stride]
                return (np.maximum(y, 0) if relu else y).transpose(0, 2, 3, 1)

            assert np.allclose(s.run(None, feeds)[0], want(), rtol=1e-3, atol=1e-3), ("channels last", c, what)
            flops = 2 * 8 * 64 * oh * oh * c * 9
            label = f"conv channels last N=8 C={c} {h}x{h} O=64 3x3 {what}"
            out.append((label, flops, lambda s=s, feeds=feeds: s.run(None, feeds), want))

    # A square product.
    a = rng.standard_normal((1024, 1024), dtype=np.float32)
    bm = rng.standard_normal((1024, 1024), dtype=np.float32)
    s = session([helper.make_node("MatMul", ["a", "b"], ["c"])], [f32("a", a.shape), f32("b", bm.shape)], [f32("c", (1024, 1024))])
    assert np.allclose(s.run(None, {"a": a, "b": bm})[0], a @ bm, rtol=1e-3, atol=1e-2)
    out.append(("matmul 1024x1024x1024", 2 * 1024**3, lambda s=s: s.run(None, {"a": a, "b": bm}), lambda: a @ bm))
    out.extend(product_cases(rng))

    # Softmax over rows, long rows and short ones.
    for rows, cols in [(4096, 1024), (16384, 256)]:
        xs = rng.standard_normal((rows, cols), dtype=np.float32)
        s = session([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [f32("x", xs.shape)], [f32("y", xs.shape)])
        assert np.allclose(s.run(None, {"x": xs})[0], softmax_numpy(xs), rtol=1e-4, atol=1e-6)
        out.append(
            (f"softmax (readme) {rows}x{cols}", None, lambda s=s, xs=xs: s.run(None, {"x": xs}), lambda xs=xs: softmax_numpy(xs))
        )
        # einlang's `softmax_into` a reused buffer; onnxruntime's side is the
        # same session (its result comes from its arena either way).
        out.append((f"softmax (readme) {rows}x{cols} into a reused buffer", None, lambda s=s, xs=xs: s.run(None, {"x": xs}), None))

    # Log-softmax over the same rows (`std::ml::log_softmax` into a reused
    # buffer; onnxruntime's `LogSoftmax`, its result from its arena).
    for rows, cols in [(4096, 1024), (16384, 256)]:
        xs = rng.standard_normal((rows, cols), dtype=np.float32)
        s = session([helper.make_node("LogSoftmax", ["x"], ["y"], axis=1)], [f32("x", xs.shape)], [f32("y", xs.shape)])
        assert np.allclose(s.run(None, {"x": xs})[0], np.log(softmax_numpy(xs)), rtol=1e-4, atol=1e-5)
        out.append((f"log_softmax {rows}x{cols} into a reused buffer", None, lambda s=s, xs=xs: s.run(None, {"x": xs}), None))

    # The same short rows as a rank-3 tensor (the kernels bench's
    # `softmax_rank3`), softmax over its last axis.
    x3 = rng.standard_normal((64, 256, 256), dtype=np.float32)
    s = session([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], [f32("x", x3.shape)], [f32("y", x3.shape)])
    want3 = softmax_numpy(x3.reshape(16384, 256)).reshape(x3.shape)
    assert np.allclose(s.run(None, {"x": x3})[0], want3, rtol=1e-4, atol=1e-6)
    out.append(("softmax (rank3) 16384x256", None, lambda s=s: s.run(None, {"x": x3}), None))

    # A transpose of a 4096^2 matrix (einlang's `y[j, i] = x[i, j]`).
    xt = rng.standard_normal((4096, 4096), dtype=np.float32)
    s = session([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], [f32("x", xt.shape)], [f32("y", (4096, 4096))])
    assert np.array_equal(s.run(None, {"x": xt})[0], xt.T)
    out.append(("transpose 4096x4096 f32", None, lambda s=s: s.run(None, {"x": xt}), lambda: np.ascontiguousarray(xt.T)))

    # Permutations of rank 3 and 4 (einlang's `split_heads`,
    # `to_channels_last`, `to_channels_first`, `reverse_axes`).
    for name, shape, perm in (
        ("heads (0,2,1,3)", (8, 512, 16, 64), (0, 2, 1, 3)),
        ("nchw->nhwc", (16, 64, 56, 56), (0, 2, 3, 1)),
        ("nhwc->nchw", (16, 56, 56, 64), (0, 3, 1, 2)),
        ("reverse (2,1,0)", (1024, 56, 56), (2, 1, 0)),
    ):
        xp = rng.standard_normal(shape, dtype=np.float32)
        want = np.ascontiguousarray(xp.transpose(perm))
        s = session([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], [f32("x", shape)], [f32("y", want.shape)])
        assert np.array_equal(s.run(None, {"x": xp})[0], want)
        label = f"permute {name} {'x'.join(map(str, shape))} f32"
        out.append((label, None, lambda s=s, xp=xp: s.run(None, {"x": xp}), lambda xp=xp, perm=perm: np.ascontiguousarray(xp.transpose(perm))))
        if name.startswith("heads"):
            # einlang's `split_heads_into` a reused buffer; onnxruntime's
            # side is the same session (its result comes from its arena).
            out.append((f"{label} into a reused buffer", None, lambda s=s, xp=xp: s.run(None, {"x": xp}), None))

    # a * b + c over 16 Mi elements.
    n = 1 << 24
    va, vb, vc = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    s = session(
        [helper.make_node("Mul", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "c"], ["y"])],
        [f32("a", (n,)), f32("b", (n,)), f32("c", (n,))],
        [f32("y", (n,))],
    )
    feeds = {"a": va, "b": vb, "c": vc}
    assert np.allclose(s.run(None, feeds)[0], va * vb + vc, rtol=1e-5, atol=1e-5)
    out.append(("a*b+c 16777216 f32", None, lambda s=s, feeds=feeds: s.run(None, feeds), lambda: va * vb + vc))
    out.extend(math_cases(rng, n))
    return out


# Labels of the cases `cargo bench --bench products` times (`product_cases`).
PRODUCTS = ("matmul 1000x", "batched q.k^T", "dense+bias+ReLU", "1x1 conv", "attention", "skinny")


def product_cases(rng):
    """The product-shaped kernels of issue 37's table (einlang's side in
    `benches/products.rs`): a product whose sizes divide into no block,
    batched attention scores, a dense layer with bias and ReLU (onnxruntime
    fuses `Gemm` and `Relu`), a 1x1 convolution (`Conv` with a 1x1
    kernel), attention over 16 heads, and 1, 4 and 8 rows times 1024^2 (and
    times the transpose of an [out, in] weight)."""
    out = []

    def add(label, flops, s, feeds, want, np_f, tol=1e-3):
        got = s.run(None, feeds)[0]
        assert np.allclose(got, want, rtol=tol, atol=tol * (1 + np.abs(want).max())), label
        out.append((label, flops, lambda s=s, feeds=feeds: s.run(None, feeds), np_f))

    def mm(label, m, k, n):
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        s = session([helper.make_node("MatMul", ["a", "b"], ["c"])], [f32("a", a.shape), f32("b", b.shape)], [f32("c", (m, n))])
        add(f"{label} {m}x{k}x{n}", 2 * m * k * n, s, {"a": a, "b": b}, a @ b, lambda: a @ b)

    mm("matmul", 1000, 777, 1029)

    # s[b, i, j] = sum[d](q[b, i, d] * k[b, j, d]): onnxruntime folds the
    # transpose into its MatMul.
    bq, nq, dq = 32, 256, 64
    q = rng.standard_normal((bq, nq, dq), dtype=np.float32)
    kk = rng.standard_normal((bq, nq, dq), dtype=np.float32)
    s = session(
        [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), helper.make_node("MatMul", ["q", "kt"], ["s"])],
        [f32("q", q.shape), f32("k", kk.shape)],
        [f32("s", (bq, nq, nq))],
    )
    scores = lambda: q @ kk.transpose(0, 2, 1)
    add(f"batched q.k^T {bq}x{nq}x{nq}x{dq}", 2 * bq * nq * nq * dq, s, {"q": q, "k": kk}, scores(), scores)

    # relu(x w + b), 256 x 1024 -> 1024.
    x = rng.standard_normal((256, 1024), dtype=np.float32)
    w = rng.standard_normal((1024, 1024), dtype=np.float32) * 0.05
    bias = rng.standard_normal(1024, dtype=np.float32)
    s = session(
        [helper.make_node("Gemm", ["x", "w", "b"], ["z"]), helper.make_node("Relu", ["z"], ["y"])],
        [f32("x", x.shape), f32("w", w.shape), f32("b", bias.shape)],
        [f32("y", (256, 1024))],
    )
    dense = lambda: np.maximum(x @ w + bias, 0)
    add("dense+bias+ReLU 256x1024->1024", 2 * 256 * 1024 * 1024, s, {"x": x, "w": w, "b": bias}, dense(), dense)

    # A 1x1 convolution, NCHW, no bias: y[n] = k . x[n].
    n, c, hw, o = 8, 256, 28, 256
    xc = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
    kc = rng.standard_normal((o, c), dtype=np.float32) * 0.1
    s = session(
        [helper.make_node("Conv", ["x", "k"], ["y"])],
        [f32("x", xc.shape), f32("k", (o, c, 1, 1))],
        [f32("y", (n, o, hw, hw))],
    )
    conv1 = lambda: np.einsum("oc,nchw->nohw", kc, xc, optimize=True)
    add(f"1x1 conv N={n} C={c} {hw}x{hw} O={o}", 2 * n * c * hw * hw * o, s, {"x": xc, "k": kc.reshape(o, c, 1, 1)}, conv1(), conv1)

    # softmax(q k^T / 8) v over 16 heads of 256 x 64, 8 of 512 x 64 and 32
    # of 128 x 32 (einlang's written-out form and `std::ml::attention`, one
    # session for both).
    def attention(h, na, da):
        qa, ka, va = (rng.standard_normal((h, na, da), dtype=np.float32) for _ in range(3))
        eight = helper.make_tensor("eight", TensorProto.FLOAT, [], [8.0])
        s = session(
            [
                helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                helper.make_node("MatMul", ["q", "kt"], ["s"]),
                helper.make_node("Div", ["s", "eight"], ["t"]),
                helper.make_node("Softmax", ["t"], ["p"], axis=-1),
                helper.make_node("MatMul", ["p", "v"], ["y"]),
            ],
            [f32("q", qa.shape), f32("k", ka.shape), f32("v", va.shape)],
            [f32("y", (h, na, da))],
            initializers=[eight],
        )

        def attention_numpy():
            t = qa @ ka.transpose(0, 2, 1) / np.float32(8)
            e = np.exp(t - t.max(axis=2, keepdims=True))
            return (e / e.sum(axis=2, keepdims=True)) @ va

        want = attention_numpy()
        for form in ["attention", "std::ml::attention"]:
            add(f"{form} softmax(q.k^T/8).v {h}x{na}x{da}", 4 * h * na * na * da, s, {"q": qa, "k": ka, "v": va}, want, attention_numpy)

    for h, na, da in [(16, 256, 64), (8, 512, 64), (32, 128, 32)]:
        attention(h, na, da)

    # Skinny products: a batch of 1, 4 and 8 rows through a 1024 x 1024 layer.
    for m in [1, 4, 8]:
        mm("skinny", m, 1024, 1024)

    # The same through a weight stored [out, in]: `Gemm` with `transB`, as
    # a dense layer's export gives it.
    def linear(m, k, n):
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        s = session([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], [f32("x", x.shape), f32("w", w.shape)], [f32("y", (m, n))])
        add(f"skinny x.w^T {m}x{k}x{n}", 2 * m * k * n, s, {"x": x, "w": w}, x @ w.T, lambda: x @ w.T)

    for m, k, n in [(1, 1024, 1024), (4, 1024, 1024), (8, 1024, 1024), (1, 4096, 4096)]:
        linear(m, k, n)
    return out


def math_cases(rng, n):
    """Elementwise math over `n` f32 values, as the kernels bench draws
    them: GELU (tanh form and erf form, opset 20's `Gelu`), sigmoid, tanh
    over [-6, 6); ln over [0, 2); sin over [-100, 100), also in f64. Each result is
    checked against numpy (`math.erf` on a prefix for GELU's erf form)."""
    import math

    out = []
    x6 = rng.uniform(-6, 6, n).astype(np.float32)
    xl = rng.uniform(0, 2, n).astype(np.float32)
    xs = rng.uniform(-100, 100, n).astype(np.float32)

    def gelu_tanh(x):
        return 0.5 * x * (1 + np.tanh(np.float32(0.7978845608) * (x + np.float32(0.044715) * x * x * x)))

    erf = np.vectorize(math.erf, otypes=[np.float64])
    specs = [
        ("gelu_tanh", x6, [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], gelu_tanh),
        ("gelu_erf", x6, [helper.make_node("Gelu", ["x"], ["y"])], None),
        ("sigmoid", x6, [helper.make_node("Sigmoid", ["x"], ["y"])], lambda x: 1 / (1 + np.exp(-x))),
        ("tanh", x6, [helper.make_node("Tanh", ["x"], ["y"])], np.tanh),
        ("ln", xl, [helper.make_node("Log", ["x"], ["y"])], np.log),
        ("sin", xs, [helper.make_node("Sin", ["x"], ["y"])], np.sin),
    ]
    for name, x, nodes, ref in specs:
        s = session(nodes, [f32("x", (n,))], [f32("y", (n,))], opset=20)
        got = s.run(None, {"x": x})[0]
        head = x[: 1 << 16].astype(np.float64)
        want = ref(x[: 1 << 16]) if ref else 0.5 * head * (1 + erf(head / math.sqrt(2)))
        assert np.allclose(got[: 1 << 16], want, rtol=1e-4, atol=1e-5), name
        run = lambda s=s, x=x: s.run(None, {"x": x})
        out.append((f"{name} {n} f32", None, run, (lambda x=x, ref=ref: ref(x)) if ref else None))
        # einlang's `NAME_into` writes into a buffer the caller reuses;
        # onnxruntime's result comes from its arena either way, so the same
        # session is its side of both lines.
        out.append((f"{name} {n} f32 into a reused buffer", None, run, None))
    # The kernels bench's whole-tensor forms (`std::ml::gelu_tanh(x)`,
    # `std::ml::sigmoid(x)`), into a reused buffer, against the same
    # onnxruntime operators.
    for name, op, attrs in [("gelu_tanh whole", "Gelu", {"approximate": "tanh"}), ("ml_sigmoid whole", "Sigmoid", {})]:
        s = session([helper.make_node(op, ["x"], ["y"], **attrs)], [f32("x", (n,))], [f32("y", (n,))], opset=20)
        out.append((f"{name} {n} f32 into a reused buffer", None, lambda s=s: s.run(None, {"x": x6}), None))
    # sin of f64 over [-100, 100) (the kernels bench's `sin64`).
    xd = rng.uniform(-100, 100, n)
    dbl = lambda name: helper.make_tensor_value_info(name, TensorProto.DOUBLE, (n,))
    s = session([helper.make_node("Sin", ["x"], ["y"])], [dbl("x")], [dbl("y")], opset=20)
    assert np.allclose(s.run(None, {"x": xd})[0], np.sin(xd), rtol=1e-12, atol=1e-15), "sin f64"
    out.append((f"sin {n} f64", None, lambda s=s: s.run(None, {"x": xd}), lambda: np.sin(xd)))
    return out


def einlang_times(only=None):
    """einlang's medians from the conv and kernels benches' summaries (the
    cases whose name contains `only`, when given)."""
    times = {}
    # The conv bench has no filter: it runs whole when `only` names a
    # convolution (not one of the product cases).
    product = bool(only) and (only == "products" or any(p in only for p in PRODUCTS))
    if only == "products":
        only = None
    if not only and not product:
        benches = ["conv", "conv_layouts", "kernels", "products"]
    elif product:
        benches = ["products"]
    else:
        benches = ["conv_layouts"] if "channels last" in only else ["conv"] if "conv" in only else ["kernels"]
    env = dict(os.environ)
    # `std::ml::conv`'s cases alone (the conv bench's `onnx_cases`).
    if only and only.startswith("std::ml::conv N="):
        env["CONV_ONNX_ONLY"] = "1"
    for bench in benches:
        run = subprocess.run(
            ["cargo", "bench", "-q", "--bench", bench] + (["--", only] if only and bench != "conv" else []),
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        for line in run.stdout.splitlines():
            m = re.match(r"(.+?): einlang ([0-9.]+) ms", line)
            if m:
                times.setdefault(m.group(1).strip(), float(m.group(2)))
            # The bench's own comparisons (its baselines, GB/s, the copy
            # bandwidth) are printed as they came.
            peak = re.match(r"peak: measured ([0-9.]+) GFLOP/s", line)
            if peak:
                MEASURED_PEAK.append(float(peak.group(1)))
            if m or line.startswith("parallel copy") or line.startswith("peak:"):
                print(f"[{bench}] {line}")
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-cargo", action="store_true", help="time onnxruntime and numpy only")
    p.add_argument("--only", help="only the cases whose label contains this (and the benches' cases with it)")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run einlang's benches and time onnxruntime alternately this many times; print each round's ratio and the range",
    )
    args = p.parse_args()
    products = lambda label: any(label.startswith(p) or label.startswith("std::ml::" + p) for p in PRODUCTS)
    chosen = [c for c in cases() if not args.only or args.only in c[0] or (args.only == "products" and products(c[0]))]
    rounds = []
    for r in range(max(1, args.rounds)):
        ours = {} if args.no_cargo else einlang_times(args.only)
        theirs = {label: median_ms(ort_f) for label, _, ort_f, _ in chosen}
        rounds.append((ours, theirs))
        if args.rounds > 1:
            print(f"round {r + 1} of {args.rounds} done", flush=True)
    print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, {CORES} threads")
    print(f"{'case':46} {'einlang':>10} {'onnxruntime':>12} {'numpy':>10} {'einlang/ort':>12}")
    for label, flops, _, np_f in chosen:
        t_np = f"{median_ms(np_f):7.3f} ms" if np_f else "-"
        ein = [o[label] for o, _ in rounds if label in o]
        ort_ms = [t[label] for _, t in rounds]
        ratios = [o[label] / t[label] for o, t in rounds if label in o]
        span = lambda v, f: f.format(v[0]) if len(v) == 1 else (f.format(min(v)) + "-" + f.format(max(v)))
        ein_s = span(ein, "{:.3f}") + " ms" if ein else "-"
        ratio = span(ratios, "{:.2f}") + "x" if ratios else "-"
        peak = peak_gflops()
        of_peak = lambda g: f", {100 * g / peak:.0f}% of {peak:.0f}" if peak else ""
        rate = ""
        if flops:
            g_ort = flops / min(ort_ms) / 1e6
            rate = f"  (onnxruntime {g_ort:.1f} GFLOP/s{of_peak(g_ort)}"
            if ein:
                g_ein = flops / min(ein) / 1e6
                rate += f"; einlang {g_ein:.1f} GFLOP/s{of_peak(g_ein)}"
            rate += ")"
        each = f"  rounds: {', '.join(f'{x:.2f}x' for x in ratios)}" if len(ratios) > 1 else ""
        print(f"{label:46} {ein_s:>10} {span(ort_ms, '{:.3f}') + ' ms':>12} {t_np:>10} {ratio:>12}{rate}{each}")


if __name__ == "__main__":
    main()
