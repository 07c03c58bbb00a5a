#!/usr/bin/env python3
"""Fits the tail polynomial of `vmath::erf_f32` (einlang-runtime/src/vmath.rs).

Above the split s = 0.84375, erf(x) = 1 - e^(R(x)) with R a polynomial in
u = x - s fitted to ln(erfc(x)) on [s, 3.92] (past 3.92 erf rounds to 1 in
f32). An error d in R becomes erfc(x) * d in the result, whose last place
is 2^-24 there, so the fit minimises max |erfc(x) (R(x) - ln(erfc(x)))|:
weighted least squares, reweighted by the error each round (Lawson's
algorithm, which converges towards the minimax fit). The coefficients are
then rounded to f32 and every f32 of [s, 3.92] is evaluated the way the Rust
code does (f32 Horner with fused multiply-adds, `fma` below, and a port of
`exp_neg_f32`), against math.erf in f64, printing the worst error in ulp.

    python3 benches/python/fit_erf.py [degree]   # 5 is what erf_f32 uses

Needs numpy only (math.erfc, math.erf are the f64 references). Run time:
about a minute (the check visits every f32 of the range).
"""
import math
import sys

import numpy as np

F = np.float32
SPLIT, END = 0.84375, 3.92


def fit(degree, points=6000, rounds=60):
    x = np.linspace(SPLIT, END, points)
    target = np.array([math.log(math.erfc(t)) for t in x])
    weight = np.array([math.erfc(t) for t in x])
    vander = np.vander(x - SPLIT, degree + 1)  # highest power first
    w = np.full(points, 1.0 / points)
    for _ in range(rounds):
        sw = np.sqrt(w) * weight
        coef, *_ = np.linalg.lstsq(vander * sw[:, None], target * sw, rcond=None)
        err = np.abs(vander @ coef - target) * weight
        w = w * err
        w /= w.sum()
    return coef, err.max() / 2.0**-24


def fma(a, b, c):
    """`a.mul_add(b, c)` for f32 arrays: the product of two f32 is exact in
    f64, the sum is rounded to f64 and then to f32 (twice, which differs
    from one rounding only when the f64 sum falls within 2^-29 ulp of a
    halfway point between f32 values)."""
    a, b, c = (np.asarray(t, dtype=np.float32).astype(np.float64) for t in (a, b, c))
    return (a * b + c).astype(np.float32)


def exp_neg_f32(v):
    """`vmath::exp_neg_f32` (`arith::exp_reduced_f32`) in numpy f32 arithmetic."""
    magic = F(12582912.0)
    shifted = fma(v, F(math.log2(math.e)), magic)
    n = shifted - magic
    ni = shifted.view(np.int32) - magic.view(np.int32)
    r = fma(-n, F(-2.1219444e-4), fma(-n, F(0.6933594), v))
    p = np.full_like(r, F(1.9875692e-4))
    for k in (1.3982e-3, 8.333452e-3, 4.1665796e-2, 1.6666665e-1, 5.0000001e-1):
        p = fma(p, r, F(k))
    er = fma(p * r, r, r) + F(1.0)
    return er * ((ni + 127) << 23).astype(np.int32).view(np.float32)


def check(coef):
    """Worst error in ulp over every f32 of [SPLIT, END], and where."""
    c = [F(k) for k in coef]
    bits = np.arange(F(SPLIT).view(np.int32), F(END).view(np.int32) + 1, dtype=np.int32)
    x = bits.view(np.float32)
    u = x - F(SPLIT)
    r = np.full_like(x, c[0])
    for k in c[1:]:
        r = fma(r, u, k)
    y = F(1.0) - exp_neg_f32(r)
    want = np.array([math.erf(float(t)) for t in x])
    ulp = 2.0 ** (np.floor(np.log2(want)) - 23)
    err = np.abs(y.astype(np.float64) - want) / ulp
    i = int(err.argmax())
    return err[i], x[i]


def main():
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    coef, fit_err = fit(degree)
    print(f"degree {degree}: fit {fit_err:.3f} ulp (weighted, exact arithmetic)")
    worst, at = check(coef)
    print(f"f32 evaluation, every f32 of [{SPLIT}, {END}]: at most {worst:.3f} ulp (at {at!r})")
    print("coefficients, highest power of (x - 0.84375) first:")
    for k in coef:
        print(f"    {np.format_float_scientific(F(k), unique=True)}")


if __name__ == "__main__":
    main()
