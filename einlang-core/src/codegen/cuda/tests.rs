//! Snapshots of the CUDA back end: the kernels (without the shared
//! prelude) and the host glue of representative device functions, and the
//! diagnostics for what it does not support.

use expect_test::{expect, Expect};

use super::{emit_function, kernel, Failure};

fn options() -> crate::Options {
    crate::Options { cuda: true, ..Default::default() }
}

/// The kernels of every device function of `src` (and of the twins they
/// need), each without the prelude.
fn kernels(src: &str) -> String {
    let compiled = match crate::compile_str(src, &options()) {
        Ok(c) => c,
        Err(d) => panic!("{}", d.iter().map(|d| d.render_text()).collect::<Vec<_>>().join("\n")),
    };
    let p = &compiled.ir;
    let fns = crate::codegen::host::FnIdents::of(p);
    let twins = super::device_twins(p);
    let mut out = String::new();
    for (id, f) in p.functions().filter(|(id, f)| f.device.is_some() || twins.contains_key(id)) {
        match emit_function(f, id, p, &fns, &options()) {
            Ok(e) => {
                for (_, source) in e.kernels {
                    let (head, rest) = source.split_once('\n').unwrap_or((&source, ""));
                    out.push_str(head);
                    out.push('\n');
                    out.push_str(rest.strip_prefix(kernel::PRELUDE).expect("every kernel starts with the prelude"));
                }
            }
            Err(Failure::Unsupported(m)) => out.push_str(&format!("unsupported in `{}`: {m}\n", f.name)),
            Err(Failure::Bug(m)) => panic!("bug in `{}`: {m}", f.name),
        }
    }
    out
}

fn check_kernels(src: &str, expect: Expect) {
    expect.assert_eq(&kernels(src));
}

/// The host glue of the device function `name`, formatted.
fn check_glue(src: &str, name: &str, expect: Expect) {
    let compiled = crate::compile_str(src, &options()).unwrap_or_else(|_| panic!("{src} compiles"));
    let p = &compiled.ir;
    let fns = crate::codegen::host::FnIdents::of(p);
    let (id, f) = p.functions().find(|(_, f)| f.name == name).expect("the function exists");
    let e = match emit_function(f, id, p, &fns, &options()) {
        Ok(e) => e,
        Err(e) => panic!("{e:?}"),
    };
    // Kernel sources are long string literals; show their names only.
    let mut tokens = e.tokens.to_string();
    for (kname, source) in &e.kernels {
        let lit = proc_macro2::Literal::string(source).to_string();
        tokens = tokens.replace(&lit, &format!("\"<source of {kname}>\""));
    }
    let file: syn::File = syn::parse_str(&tokens).unwrap_or_else(|e| panic!("glue does not parse: {e}\n{tokens}"));
    expect.assert_eq(&prettyplease::unparse(&file));
}

/// The diagnostics of compiling `src` (rendered): the pipeline's errors, or
/// those code generation emits as `compile_error!`s.
fn check_error(src: &str, options: &crate::Options, expect: Expect) {
    let compiled = match crate::compile_str(src, options) {
        Ok(compiled) => compiled,
        Err(diags) => {
            let texts: Vec<String> = diags.iter().map(|d| d.primary_text()).collect();
            expect.assert_eq(&texts.join("\n"));
            return;
        }
    };
    // The message of every `compile_error!("...")`.
    let mut messages = Vec::new();
    let mut trees = compiled.rust.into_iter().peekable();
    while let Some(t) = trees.next() {
        if matches!(&t, proc_macro2::TokenTree::Ident(id) if id == "compile_error") {
            trees.next();
            if let Some(proc_macro2::TokenTree::Group(g)) = trees.next() {
                if let Ok(lit) = syn::parse2::<syn::LitStr>(g.stream()) {
                    messages.push(lit.value());
                }
            }
        }
    }
    expect.assert_eq(&messages.join("\n"));
}

#[test]
fn elementwise_with_a_scalar_function() {
    check_kernels(
        r#"
        use std::ml::relu;
        #[device(cuda)]
        pub fn act(x: [f32; N], s: f32) -> [f32; N] {
            let y[i] = relu(x[i] * s) + 1.0;
            y
        }
        "#,
        expect![[r#"
            // einlang: kernel `act_k0` of `act`
            static __device__ float __ein_fn_relu_f32_88be2e0c(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void act_k0(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, float s, long long N, __ein_u64* __status) {
                const long long __n = (N);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long i = 0LL + __r;
                    __out[__p] = (__ein_fn_relu_f32_88be2e0c((x[i] * s), __status) + 1.0f);
                }
            }
            // einlang: kernel `act_k1` of `act`
            static __device__ float __ein_fn_relu_f32_88be2e0c(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void act_k1(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, float s, long long N, __ein_u64* __status) {
                const long long __n4 = ((1LL) * ((N))) / 4;
                #pragma unroll 4
                for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; __p4 += (long long)gridDim.x * blockDim.x) {
                    const long long __p = __p4 * 4;
                    long long __rr = __p4;
                    const long long __q = __ein_split(&__rr, ((N)) / 4) * 4;
                    float4 __o;
                        const float4 __v1 = __ldg((const float4*)(x + (__q)));
                        { const long long i = __q + 0; __o.x = (__ein_fn_relu_f32_88be2e0c((__v1.x * s), __status) + 1.0f); }
                        { const long long i = __q + 1; __o.y = (__ein_fn_relu_f32_88be2e0c((__v1.y * s), __status) + 1.0f); }
                        { const long long i = __q + 2; __o.z = (__ein_fn_relu_f32_88be2e0c((__v1.z * s), __status) + 1.0f); }
                        { const long long i = __q + 3; __o.w = (__ein_fn_relu_f32_88be2e0c((__v1.w * s), __status) + 1.0f); }
                    *(float4*)(__out + __p) = __o;
                }
            }
        "#]],
    );
}

#[test]
fn integer_arithmetic_wraps_and_division_is_checked() {
    check_kernels(
        r#"
        #[device(cuda)]
        pub fn ints(a: [i32; N], b: [i32; N]) -> [i32; N] {
            let c[i] = a[i] * b[i] - (a[i] / b[i]) + -a[i];
            c
        }
        "#,
        expect![[r#"
            // einlang: kernel `ints_k0` of `ints`
            extern "C" __global__ void ints_k0(int* __restrict__ __out, const int* __restrict__ a, long long __d0_a, const int* __restrict__ b, long long __d0_b, long long N, __ein_u64* __status) {
                const long long __n = (N);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long i = 0LL + __r;
                    __out[__p] = ((int)((__ein_u64)(((int)((__ein_u64)(((int)((__ein_u64)(a[i]) * (__ein_u64)(b[i])))) - (__ein_u64)(__ein_div<int>(a[i], b[i], 1ULL, __status))))) + (__ein_u64)(((int)(0ULL - (__ein_u64)(a[i]))))));
                }
            }
        "#]],
    );
}

#[test]
fn float_to_int_casts_saturate() {
    check_kernels(
        r#"
        #[device(cuda)]
        pub fn quantize(x: [f32; N]) -> [i8; N] {
            let q[i] = (x[i] * 127.0) as i8;
            q
        }
        "#,
        expect![[r#"
            // einlang: kernel `quantize_k0` of `quantize`
            extern "C" __global__ void quantize_k0(signed char* __restrict__ __out, const float* __restrict__ x, long long __d0_x, long long N, __ein_u64* __status) {
                const long long __n = (N);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long i = 0LL + __r;
                    __out[__p] = __ein_f2i<signed char, float>((x[i] * 127.0f), (signed char)(-128), (signed char)(127));
                }
            }
        "#]],
    );
}

#[test]
fn softmax_is_one_kernel_over_rows() {
    check_kernels(
        r#"
        use std::ml::softmax;
        #[device(cuda)]
        pub fn probs(x: [f32; B, C]) -> [f32; B, C] {
            softmax(x)
        }
        "#,
        expect![[r#"
            // einlang: kernel `__cuda_softmax_f32r2_2cb64e11_k0` of `softmax_f32r2_2cb64e11`
            extern "C" __global__ void __cuda_softmax_f32r2_2cb64e11_k0(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, long long __d1_x, long long X0, long long X1, __ein_u64* __status) {
                const long long __n = (X0);
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    const long long n_4 = 0LL + __p;
                    const float m = [&]() -> float { float __acc1 = (float)(__int_as_float(0xff800000)); for (long long j = 0LL; j < (X1); ++j) { { const float __v = x[(n_4) * __d1_x + j]; if (__v > __acc1) __acc1 = __v; } } return __acc1; }();
                    auto e = [&](long long j_2) -> float { return expf((x[(n_4) * __d1_x + j_2] - m)); };
                    const float s = [&]() -> float { float __acc2 = (float)(0); for (long long j_3 = 0LL; j_3 < (X1); ++j_3) { __acc2 = __acc2 + e(j_3); } return __acc2; }();
                    const long long __m = (X1);
                    #pragma unroll 4
                    for (long long __q = 0; __q < __m; ++__q) {
                        long long __r = __q;
                        const long long j_4 = 0LL + __r;
                        __out[__p * __m + __q] = (e(j_4) / s);
                    }
                }
            }
            // einlang: kernel `__cuda_softmax_f32r2_2cb64e11_k1` of `softmax_f32r2_2cb64e11`
            extern "C" __global__ void __cuda_softmax_f32r2_2cb64e11_k1(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, long long __d1_x, long long X0, long long X1, __ein_u64* __status) {
                const long long __n = (X0);
                for (long long __p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); __p < __n; __p += (long long)gridDim.x * (blockDim.x >> 5)) {
                    const long long n_4 = 0LL + __p;
                    float __red1;
                    {
                        float __acc = (float)(__int_as_float(0xff800000));
                        #pragma unroll 4
                        for (long long __q = (threadIdx.x & 31); __q < (X1); __q += 32) {
                            long long __r = __q;
                            const long long j = 0LL + __r;
                            do { { const float __v = x[(n_4) * __d1_x + j]; if (__v > __acc) __acc = __v; } } while (false);
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { { const float __v = __ein_shfl(__acc, __s); if (__v > __acc) __acc = __v; } }
                        __red1 = __acc;
                    }
                    const float m = __red1;
                    auto e = [&](long long j_2) -> float { return expf((x[(n_4) * __d1_x + j_2] - m)); };
                    float __red3;
                    {
                        float __acc = (float)(0);
                        #pragma unroll 4
                        for (long long __q = (threadIdx.x & 31); __q < (X1); __q += 32) {
                            long long __r = __q;
                            const long long j_3 = 0LL + __r;
                            do { __acc = __acc + e(j_3); } while (false);
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                        __red3 = __acc;
                    }
                    const float s = __red3;
                    const long long __m = (X1);
                    #pragma unroll 4
                    for (long long __q = (threadIdx.x & 31); __q < __m; __q += 32) {
                        long long __r = __q;
                        const long long j_4 = 0LL + __r;
                        __out[__p * __m + __q] = (e(j_4) / s);
                    }
                }
            }
            // einlang: kernel `__cuda_softmax_f32r2_2cb64e11_k2` of `softmax_f32r2_2cb64e11`
            extern "C" __global__ void __cuda_softmax_f32r2_2cb64e11_k2(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, long long __d1_x, long long X0, long long X1, __ein_u64* __status) {
                const long long __n = (X0);
                for (long long __p = blockIdx.x; __p < __n; __p += gridDim.x) {
                    const long long n_4 = 0LL + __p;
                    __shared__ float __sh2[32];
                    float __red1;
                    {
                        float __acc = (float)(__int_as_float(0xff800000));
                        #pragma unroll 4
                        for (long long __q = threadIdx.x; __q < (X1); __q += blockDim.x) {
                            long long __r = __q;
                            const long long j = 0LL + __r;
                            do { { const float __v = x[(n_4) * __d1_x + j]; if (__v > __acc) __acc = __v; } } while (false);
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { { const float __v = __ein_shfl(__acc, __s); if (__v > __acc) __acc = __v; } }
                        if ((threadIdx.x & 31) == 0) __sh2[threadIdx.x >> 5] = __acc;
                        __syncthreads();
                        if (threadIdx.x < 32) {
                            __acc = threadIdx.x < (blockDim.x >> 5) ? __sh2[threadIdx.x] : (float)(__int_as_float(0xff800000));
                            for (int __s = 16; __s > 0; __s >>= 1) { { const float __v = __ein_shfl(__acc, __s); if (__v > __acc) __acc = __v; } }
                            if (threadIdx.x == 0) __sh2[0] = __acc;
                        }
                        __syncthreads();
                        __red1 = __sh2[0];
                        __syncthreads();
                    }
                    const float m = __red1;
                    auto e = [&](long long j_2) -> float { return expf((x[(n_4) * __d1_x + j_2] - m)); };
                    __shared__ float __sh4[32];
                    float __red3;
                    {
                        float __acc = (float)(0);
                        #pragma unroll 4
                        for (long long __q = threadIdx.x; __q < (X1); __q += blockDim.x) {
                            long long __r = __q;
                            const long long j_3 = 0LL + __r;
                            do { __acc = __acc + e(j_3); } while (false);
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                        if ((threadIdx.x & 31) == 0) __sh4[threadIdx.x >> 5] = __acc;
                        __syncthreads();
                        if (threadIdx.x < 32) {
                            __acc = threadIdx.x < (blockDim.x >> 5) ? __sh4[threadIdx.x] : (float)(0);
                            for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                            if (threadIdx.x == 0) __sh4[0] = __acc;
                        }
                        __syncthreads();
                        __red3 = __sh4[0];
                        __syncthreads();
                    }
                    const float s = __red3;
                    const long long __m = (X1);
                    #pragma unroll 4
                    for (long long __q = threadIdx.x; __q < __m; __q += blockDim.x) {
                        long long __r = __q;
                        const long long j_4 = 0LL + __r;
                        __out[__p * __m + __q] = (e(j_4) / s);
                    }
                }
            }
            // einlang: kernel `__cuda_softmax_f32r2_2cb64e11_k3` of `softmax_f32r2_2cb64e11`
            extern "C" __global__ void __cuda_softmax_f32r2_2cb64e11_k3(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, long long __d1_x, long long X0, long long X1, __ein_u64* __status) {
                const long long __n = (X0);
                for (long long __p = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); __p < __n; __p += (long long)gridDim.x * (blockDim.x >> 5)) {
                    const long long n_4 = 0LL + __p;
                    float __red1;
                    {
                        float __acc = (float)(__int_as_float(0xff800000));
                        #pragma unroll 4
                        for (long long __q4 = (threadIdx.x & 31); __q4 < ((X1)) / 4; __q4 += 32) {
                            const long long __q = __q4 * 4;
                        const float4 __v3 = __ldg((const float4*)(x + ((n_4) * __d1_x + __q)));
                        { const long long j = __q + 0; do { { const float __v = __v3.x; if (__v > __acc) __acc = __v; } } while (false); }
                        { const long long j = __q + 1; do { { const float __v = __v3.y; if (__v > __acc) __acc = __v; } } while (false); }
                        { const long long j = __q + 2; do { { const float __v = __v3.z; if (__v > __acc) __acc = __v; } } while (false); }
                        { const long long j = __q + 3; do { { const float __v = __v3.w; if (__v > __acc) __acc = __v; } } while (false); }
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { { const float __v = __ein_shfl(__acc, __s); if (__v > __acc) __acc = __v; } }
                        __red1 = __acc;
                    }
                    const float m = __red1;
                    auto e = [&](long long j_2) -> float { return expf((x[(n_4) * __d1_x + j_2] - m)); };
                    float __red4;
                    {
                        float __acc = (float)(0);
                        #pragma unroll 4
                        for (long long __q4 = (threadIdx.x & 31); __q4 < ((X1)) / 4; __q4 += 32) {
                            const long long __q = __q4 * 4;
                        const float4 __v6 = __ldg((const float4*)(x + ((n_4) * __d1_x + __q)));
                        { const long long j_3 = __q + 0; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.x - m)); }(); } while (false); }
                        { const long long j_3 = __q + 1; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.y - m)); }(); } while (false); }
                        { const long long j_3 = __q + 2; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.z - m)); }(); } while (false); }
                        { const long long j_3 = __q + 3; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.w - m)); }(); } while (false); }
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                        __red4 = __acc;
                    }
                    const float s = __red4;
                    const long long __m = (X1);
                    #pragma unroll 4
                    for (long long __q4 = (threadIdx.x & 31); __q4 < __m / 4; __q4 += 32) {
                        const long long __q = __q4 * 4;
                        float4 __o;
                        const float4 __v7 = __ldg((const float4*)(x + ((n_4) * __d1_x + __q)));
                        { const long long j_4 = __q + 0; __o.x = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.x - m)); }() / s); }
                        { const long long j_4 = __q + 1; __o.y = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.y - m)); }() / s); }
                        { const long long j_4 = __q + 2; __o.z = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.z - m)); }() / s); }
                        { const long long j_4 = __q + 3; __o.w = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.w - m)); }() / s); }
                        *(float4*)(__out + __p * __m + __q) = __o;
                    }
                }
            }
            // einlang: kernel `__cuda_softmax_f32r2_2cb64e11_k4` of `softmax_f32r2_2cb64e11`
            extern "C" __global__ void __cuda_softmax_f32r2_2cb64e11_k4(float* __restrict__ __out, const float* __restrict__ x, long long __d0_x, long long __d1_x, long long X0, long long X1, __ein_u64* __status) {
                const long long __n = (X0);
                for (long long __p = blockIdx.x; __p < __n; __p += gridDim.x) {
                    const long long n_4 = 0LL + __p;
                    __shared__ float __sh2[32];
                    float __red1;
                    {
                        float __acc = (float)(__int_as_float(0xff800000));
                        #pragma unroll 4
                        for (long long __q4 = threadIdx.x; __q4 < ((X1)) / 4; __q4 += blockDim.x) {
                            const long long __q = __q4 * 4;
                        const float4 __v3 = __ldg((const float4*)(x + ((n_4) * __d1_x + __q)));
                        { const long long j = __q + 0; do { { const float __v = __v3.x; if (__v > __acc) __acc = __v; } } while (false); }
                        { const long long j = __q + 1; do { { const float __v = __v3.y; if (__v > __acc) __acc = __v; } } while (false); }
                        { const long long j = __q + 2; do { { const float __v = __v3.z; if (__v > __acc) __acc = __v; } } while (false); }
                        { const long long j = __q + 3; do { { const float __v = __v3.w; if (__v > __acc) __acc = __v; } } while (false); }
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { { const float __v = __ein_shfl(__acc, __s); if (__v > __acc) __acc = __v; } }
                        if ((threadIdx.x & 31) == 0) __sh2[threadIdx.x >> 5] = __acc;
                        __syncthreads();
                        if (threadIdx.x < 32) {
                            __acc = threadIdx.x < (blockDim.x >> 5) ? __sh2[threadIdx.x] : (float)(__int_as_float(0xff800000));
                            for (int __s = 16; __s > 0; __s >>= 1) { { const float __v = __ein_shfl(__acc, __s); if (__v > __acc) __acc = __v; } }
                            if (threadIdx.x == 0) __sh2[0] = __acc;
                        }
                        __syncthreads();
                        __red1 = __sh2[0];
                        __syncthreads();
                    }
                    const float m = __red1;
                    auto e = [&](long long j_2) -> float { return expf((x[(n_4) * __d1_x + j_2] - m)); };
                    __shared__ float __sh5[32];
                    float __red4;
                    {
                        float __acc = (float)(0);
                        #pragma unroll 4
                        for (long long __q4 = threadIdx.x; __q4 < ((X1)) / 4; __q4 += blockDim.x) {
                            const long long __q = __q4 * 4;
                        const float4 __v6 = __ldg((const float4*)(x + ((n_4) * __d1_x + __q)));
                        { const long long j_3 = __q + 0; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.x - m)); }(); } while (false); }
                        { const long long j_3 = __q + 1; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.y - m)); }(); } while (false); }
                        { const long long j_3 = __q + 2; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.z - m)); }(); } while (false); }
                        { const long long j_3 = __q + 3; do { __acc = __acc + [&]() -> float { const long long j_2 = j_3; return expf((__v6.w - m)); }(); } while (false); }
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                        if ((threadIdx.x & 31) == 0) __sh5[threadIdx.x >> 5] = __acc;
                        __syncthreads();
                        if (threadIdx.x < 32) {
                            __acc = threadIdx.x < (blockDim.x >> 5) ? __sh5[threadIdx.x] : (float)(0);
                            for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                            if (threadIdx.x == 0) __sh5[0] = __acc;
                        }
                        __syncthreads();
                        __red4 = __sh5[0];
                        __syncthreads();
                    }
                    const float s = __red4;
                    const long long __m = (X1);
                    #pragma unroll 4
                    for (long long __q4 = threadIdx.x; __q4 < __m / 4; __q4 += blockDim.x) {
                        const long long __q = __q4 * 4;
                        float4 __o;
                        const float4 __v7 = __ldg((const float4*)(x + ((n_4) * __d1_x + __q)));
                        { const long long j_4 = __q + 0; __o.x = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.x - m)); }() / s); }
                        { const long long j_4 = __q + 1; __o.y = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.y - m)); }() / s); }
                        { const long long j_4 = __q + 2; __o.z = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.z - m)); }() / s); }
                        { const long long j_4 = __q + 3; __o.w = ([&]() -> float { const long long j_2 = j_4; return expf((__v7.w - m)); }() / s); }
                        *(float4*)(__out + __p * __m + __q) = __o;
                    }
                }
            }
        "#]],
    );
}

#[test]
fn matmul_goes_to_cublas() {
    let src = r#"
        use std::ml::relu;
        #[device(cuda)]
        pub fn dense(x: [f32; B, I], w: [f32; I, O], b: [f32; O]) -> [f32; B, O] {
            let y[n, o] = relu(sum[i](x[n, i] * w[i, o]) + b[o]);
            y
        }
    "#;
    check_kernels(
        src,
        expect![[r#"
            // einlang: kernel `dense_k0` of `dense`
            static __device__ float __ein_fn_relu_f32_45b6377f(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void dense_k0(float* __restrict__ __out, const float* __restrict__ b, long long __d0_b, const float* __restrict__ y_mm, long long __d0_y_mm, long long __d1_y_mm, long long B, long long O, __ein_u64* __status) {
                const long long __n = (B) * (O);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long o = 0LL + __ein_split(&__r, (O));
                    const long long n = 0LL + __r;
                    __out[__p] = __ein_fn_relu_f32_45b6377f((y_mm[(n) * __d1_y_mm + o] + b[o]), __status);
                }
            }
            // einlang: kernel `dense_k1` of `dense`
            static __device__ float __ein_fn_relu_f32_45b6377f(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void dense_k1(float* __restrict__ __out, const float* __restrict__ b, long long __d0_b, const float* __restrict__ y_mm, long long __d0_y_mm, long long __d1_y_mm, long long B, long long O, __ein_u64* __status) {
                const long long __n4 = (((B)) * ((O))) / 4;
                #pragma unroll 4
                for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; __p4 += (long long)gridDim.x * blockDim.x) {
                    const long long __p = __p4 * 4;
                    long long __rr = __p4;
                    const long long __q = __ein_split(&__rr, ((O)) / 4) * 4;
                    long long __r = __rr;
                    const long long n = 0LL + __r;
                    float4 __o;
                        const float4 __v1 = __ldg((const float4*)(y_mm + ((n) * __d1_y_mm + __q)));
                        const float4 __v2 = __ldg((const float4*)(b + (__q)));
                        { const long long o = __q + 0; __o.x = __ein_fn_relu_f32_45b6377f((__v1.x + __v2.x), __status); }
                        { const long long o = __q + 1; __o.y = __ein_fn_relu_f32_45b6377f((__v1.y + __v2.y), __status); }
                        { const long long o = __q + 2; __o.z = __ein_fn_relu_f32_45b6377f((__v1.z + __v2.z), __status); }
                        { const long long o = __q + 3; __o.w = __ein_fn_relu_f32_45b6377f((__v1.w + __v2.w), __status); }
                    *(float4*)(__out + __p) = __o;
                }
            }
        "#]],
    );
    check_glue(
        src,
        "dense",
        expect![[r##"
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                unused_unsafe,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn dense(
                dev: &::einlang::__private::cuda::Device,
                x: &::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix2>,
                w: &::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix2>,
                b: &::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix1>,
            ) -> ::core::result::Result<
                ::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                const __K0: __rt::cuda::KernelInfo = __rt::cuda::KernelInfo {
                    name: "dense_k0",
                    function: "dense",
                    source: "<source of dense_k0>",
                };
                __rt::cuda::inventory::submit! {
                    __K0
                }
                const __K1: __rt::cuda::KernelInfo = __rt::cuda::KernelInfo {
                    name: "dense_k1",
                    function: "dense",
                    source: "<source of dense_k1>",
                };
                __rt::cuda::inventory::submit! {
                    __K1
                }
                x.check_device("dense", "x", dev)?;
                w.check_device("dense", "w", dev)?;
                b.check_device("dense", "b", dev)?;
                let B: i64 = x.shape()[0] as i64;
                let I: i64 = x.shape()[1] as i64;
                let O: i64 = w.shape()[1] as i64;
                __rt::shape::check_dim("dense", "w", 0, "I", I, w.shape()[0])?;
                __rt::shape::check_dim("dense", "b", 0, "O", O, b.shape()[0])?;
                let __status = dev.status(false)?;
                let mut __own_y_mm = unsafe {
                    __rt::cuda::Tensor::<
                        f32,
                        __nd::Ix2,
                    >::uninit(
                        dev,
                        __nd::IntoDimension::into_dimension([
                            __rt::shape::extent("dense", "B", B)?,
                            __rt::shape::extent("dense", "O", O)?,
                        ]),
                    )
                }?;
                {
                    let __sa = __rt::cuda::row_major_strides(x.shape());
                    let __sb = __rt::cuda::row_major_strides(w.shape());
                    dev.gemm(
                        "dense",
                        &mut __own_y_mm,
                        x.slice(),
                        (0i64, __sa[0], __sa[1]),
                        w.slice(),
                        (0i64, __sb[0], __sb[1]),
                        (1i64, B, O, I),
                    )?;
                }
                let y_mm = &__own_y_mm;
                let mut __own_y = unsafe {
                    __rt::cuda::Tensor::<
                        f32,
                        __nd::Ix2,
                    >::uninit(
                        dev,
                        __nd::IntoDimension::into_dimension([
                            __rt::shape::extent("dense", "B", B)?,
                            __rt::shape::extent("dense", "O", O)?,
                        ]),
                    )
                }?;
                let __points: usize = __own_y.len();
                if __points > 0 {
                    let __out = __own_y.arg_mut();
                    let __args = [
                        __out,
                        b.arg(),
                        __rt::cuda::Arg::i64(b.shape()[0] as i64),
                        y_mm.arg(),
                        __rt::cuda::Arg::i64(y_mm.shape()[0] as i64),
                        __rt::cuda::Arg::i64(y_mm.shape()[1] as i64),
                        __rt::cuda::Arg::i64(B),
                        __rt::cuda::Arg::i64(O),
                        __status.arg(),
                    ];
                    unsafe {
                        dev.launch(
                            if __own_y.arg().0 % 16 == 0 && (O) % 4 == 0
                                && b.shape().last().is_some_and(|&n| n % 4 == 0 && n as i64 >= O)
                                && b.arg().0 % 16 == 0
                                && y_mm.shape().last().is_some_and(|&n| n % 4 == 0 && n as i64 >= O)
                                && y_mm.arg().0 % 16 == 0
                            {
                                &__K1
                            } else {
                                &__K0
                            },
                            dev.grid_for(__points as u64, 256u32),
                            256u32,
                            &__args,
                        )
                    }?;
                }
                let y = &__own_y;
                let __result = __own_y;
                __status.check("dense", &[])?;
                Ok(__result)
            }
        "##]],
    );
}

#[test]
fn gather_checks_its_indices() {
    check_kernels(
        r#"
        #[device(cuda)]
        pub fn embed(table: [f32; V, D], ids: [i64; N]) -> [f32; N, D] {
            let g[n, d] = table[ids[n], d];
            g
        }
        "#,
        expect![[r#"
            // einlang: kernel `embed_k0` of `embed`
            extern "C" __global__ void embed_k0(float* __restrict__ __out, const float* __restrict__ table, long long __d0_table, long long __d1_table, const long long* __restrict__ ids, long long __d0_ids, long long D, long long N, __ein_u64* __status) {
                const long long __n = (N) * (D);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long d = 0LL + __ein_split(&__r, (D));
                    const long long n = 0LL + __r;
                    __out[__p] = [&]() -> float { const long long __i1 = ids[n]; if (!__ein_in(__i1, __d0_table, 1ULL, __status)) return (float)0; const long long __i2 = d; if (!__ein_in(__i2, __d1_table, 2ULL, __status)) return (float)0; return table[(__i1) * __d1_table + __i2]; }();
                }
            }
            // einlang: kernel `embed_k1` of `embed`
            extern "C" __global__ void embed_k1(float* __restrict__ __out, const float* __restrict__ table, long long __d0_table, long long __d1_table, const long long* __restrict__ ids, long long __d0_ids, long long D, long long N, __ein_u64* __status) {
                const long long __n4 = (((N)) * ((D))) / 4;
                #pragma unroll 4
                for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; __p4 += (long long)gridDim.x * blockDim.x) {
                    const long long __p = __p4 * 4;
                    long long __rr = __p4;
                    const long long __q = __ein_split(&__rr, ((D)) / 4) * 4;
                    long long __r = __rr;
                    const long long n = 0LL + __r;
                    float4 __o;
                        { const long long d = __q + 0; __o.x = [&]() -> float { const long long __i1 = ids[n]; if (!__ein_in(__i1, __d0_table, 5ULL, __status)) return (float)0; const long long __i2 = d; if (!__ein_in(__i2, __d1_table, 6ULL, __status)) return (float)0; return table[(__i1) * __d1_table + __i2]; }(); }
                        { const long long d = __q + 1; __o.y = [&]() -> float { const long long __i3 = ids[n]; if (!__ein_in(__i3, __d0_table, 7ULL, __status)) return (float)0; const long long __i4 = d; if (!__ein_in(__i4, __d1_table, 8ULL, __status)) return (float)0; return table[(__i3) * __d1_table + __i4]; }(); }
                        { const long long d = __q + 2; __o.z = [&]() -> float { const long long __i5 = ids[n]; if (!__ein_in(__i5, __d0_table, 9ULL, __status)) return (float)0; const long long __i6 = d; if (!__ein_in(__i6, __d1_table, 10ULL, __status)) return (float)0; return table[(__i5) * __d1_table + __i6]; }(); }
                        { const long long d = __q + 3; __o.w = [&]() -> float { const long long __i7 = ids[n]; if (!__ein_in(__i7, __d0_table, 11ULL, __status)) return (float)0; const long long __i8 = d; if (!__ein_in(__i8, __d1_table, 12ULL, __status)) return (float)0; return table[(__i7) * __d1_table + __i8]; }(); }
                    *(float4*)(__out + __p) = __o;
                }
            }
        "#]],
    );
}

#[test]
fn recurrence_is_a_host_loop_of_launches() {
    let src = r#"
        use std::math::tanh;
        #[device(cuda)]
        pub fn rnn(x: [f32; T, H], w: [f32; H, H]) -> [f32; T, H] {
            let h[0, j] = tanh(x[0, j]);
            let h[t in 1..T, j] = tanh(x[t, j] + sum[k](h[t - 1, k] * w[k, j]));
            h
        }
    "#;
    check_kernels(
        src,
        expect![[r#"
            // einlang: kernel `rnn_k0` of `rnn`
            extern "C" __global__ void rnn_k0(float* __out, const float* x, long long __d0_x, long long __d1_x, long long H, long long t, long long __x1, __ein_u64* __status) {
                const long long __n = (H);
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long j = 0LL + __r;
                    __out[((t)) * __x1 + (j)] = tanhf([&]() -> float { const long long __i1 = ((long long)0ULL); if (!__ein_in(__i1, __d0_x, 1ULL, __status)) return (float)0; const long long __i2 = j; if (!__ein_in(__i2, __d1_x, 2ULL, __status)) return (float)0; return x[(__i1) * __d1_x + __i2]; }());
                }
            }
            // einlang: kernel `rnn_k1` of `rnn`
            extern "C" __global__ void rnn_k1(float* __out, const float* x, long long __d0_x, long long __d1_x, const float* w, long long __d0_w, long long __d1_w, const float* h, long long __d0_h, long long __d1_h, long long H, long long t, long long __x1, __ein_u64* __status) {
                const long long __n = (H);
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long j_2 = 0LL + __r;
                    __out[((t)) * __x1 + (j_2)] = tanhf((x[(t) * __d1_x + j_2] + [&]() -> float { float __acc1 = (float)(0); for (long long k = 0LL; k < (H); ++k) { __acc1 = __acc1 + (h[(((long long)((__ein_u64)(t) - (__ein_u64)(((long long)1ULL))))) * __d1_h + k] * w[(k) * __d1_w + j_2]); } return __acc1; }()));
                }
            }
            // einlang: kernel `rnn_k2` of `rnn`
            extern "C" __global__ void rnn_k2(float* __out, const float* x, long long __d0_x, long long __d1_x, const float* w, long long __d0_w, long long __d1_w, const float* h, long long __d0_h, long long __d1_h, long long T, long long H, long long h_axis0_len, long long __x1, __ein_u64* __status) {
                for (long long t = 0LL; t < (h_axis0_len); ++t) {
                    if ((t) == 0LL) {
                        for (long long __p = threadIdx.x; __p < (H); __p += blockDim.x) {
                            long long __r = __p;
                            const long long j = 0LL + __r;
                            __out[((t)) * __x1 + (j)] = tanhf([&]() -> float { const long long __i1 = ((long long)0ULL); if (!__ein_in(__i1, __d0_x, 3ULL, __status)) return (float)0; const long long __i2 = j; if (!__ein_in(__i2, __d1_x, 4ULL, __status)) return (float)0; return x[(__i1) * __d1_x + __i2]; }());
                        }
                        __syncthreads();
                    }
                    if ((1LL) <= (t) && (t) < (T)) {
                        for (long long __p = threadIdx.x; __p < (H); __p += blockDim.x) {
                            long long __r = __p;
                            const long long j_2 = 0LL + __r;
                            __out[((t)) * __x1 + (j_2)] = tanhf((x[(t) * __d1_x + j_2] + [&]() -> float { float __acc3 = (float)(0); for (long long k = 0LL; k < (H); ++k) { __acc3 = __acc3 + (h[(((long long)((__ein_u64)(t) - (__ein_u64)(((long long)1ULL))))) * __d1_h + k] * w[(k) * __d1_w + j_2]); } return __acc3; }()));
                        }
                        __syncthreads();
                    }
                }
            }
        "#]],
    );
    check_glue(
        src,
        "rnn",
        expect![[r##"
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                unused_unsafe,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn rnn(
                dev: &::einlang::__private::cuda::Device,
                x: &::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix2>,
                w: &::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix2>,
            ) -> ::core::result::Result<
                ::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix2>,
                ::einlang::__private::Error,
            > {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                const __K0: __rt::cuda::KernelInfo = __rt::cuda::KernelInfo {
                    name: "rnn_k0",
                    function: "rnn",
                    source: "<source of rnn_k0>",
                };
                __rt::cuda::inventory::submit! {
                    __K0
                }
                const __K1: __rt::cuda::KernelInfo = __rt::cuda::KernelInfo {
                    name: "rnn_k1",
                    function: "rnn",
                    source: "<source of rnn_k1>",
                };
                __rt::cuda::inventory::submit! {
                    __K1
                }
                const __K2: __rt::cuda::KernelInfo = __rt::cuda::KernelInfo {
                    name: "rnn_k2",
                    function: "rnn",
                    source: "<source of rnn_k2>",
                };
                __rt::cuda::inventory::submit! {
                    __K2
                }
                x.check_device("rnn", "x", dev)?;
                w.check_device("rnn", "w", dev)?;
                let T: i64 = x.shape()[0] as i64;
                let H: i64 = x.shape()[1] as i64;
                __rt::shape::check_dim("rnn", "w", 0, "H", H, w.shape()[0])?;
                __rt::shape::check_dim("rnn", "w", 1, "H", H, w.shape()[1])?;
                let __status = dev.status(true)?;
                let h_axis0_len: i64 = __rt::shape::checked_extent(
                    "rnn",
                    "max(1, T)",
                    (|| -> ::core::option::Option<i64> {
                        ::core::option::Option::Some(::core::cmp::max((1i64), (T)))
                    })(),
                )? as i64;
                let mut __own_h = __rt::cuda::Tensor::<
                    f32,
                    __nd::Ix2,
                >::zeros(
                    dev,
                    __nd::IntoDimension::into_dimension([
                        __rt::shape::extent("rnn", "h_axis0_len", h_axis0_len)?,
                        __rt::shape::extent("rnn", "H", H)?,
                    ]),
                )?;
                {
                    if true && 1i64 * (H).max(0) <= 2048i64 && 1i64 * (H).max(0) <= 2048i64 {
                        let __points: usize = 1usize;
                        if __points > 0 {
                            let __out = __own_h.arg_mut();
                            let __args = [
                                __out,
                                x.arg(),
                                __rt::cuda::Arg::i64(x.shape()[0] as i64),
                                __rt::cuda::Arg::i64(x.shape()[1] as i64),
                                w.arg(),
                                __rt::cuda::Arg::i64(w.shape()[0] as i64),
                                __rt::cuda::Arg::i64(w.shape()[1] as i64),
                                (&__own_h).arg(),
                                __rt::cuda::Arg::i64((&__own_h).shape()[0] as i64),
                                __rt::cuda::Arg::i64((&__own_h).shape()[1] as i64),
                                __rt::cuda::Arg::i64(T),
                                __rt::cuda::Arg::i64(H),
                                __rt::cuda::Arg::i64(h_axis0_len),
                                __rt::cuda::Arg::i64(__own_h.shape()[1] as i64),
                                __status.arg(),
                            ];
                            unsafe {
                                dev.launch(
                                    &__K2,
                                    dev.grid_for(__points as u64, 256u32),
                                    256u32,
                                    &__args,
                                )
                            }?;
                        }
                    } else {
                        let mut t: i64 = 0i64;
                        let __end = h_axis0_len;
                        while t < __end {
                            if true && t == 0i64 {
                                let __points: usize = 1usize * ((H).max(0) as usize);
                                if __points > 0 {
                                    let __out = __own_h.arg_mut();
                                    let __args = [
                                        __out,
                                        x.arg(),
                                        __rt::cuda::Arg::i64(x.shape()[0] as i64),
                                        __rt::cuda::Arg::i64(x.shape()[1] as i64),
                                        __rt::cuda::Arg::i64(H),
                                        __rt::cuda::Arg::i64(t),
                                        __rt::cuda::Arg::i64(__own_h.shape()[1] as i64),
                                        __status.arg(),
                                    ];
                                    unsafe {
                                        dev.launch(
                                            &__K0,
                                            dev.grid_for(__points as u64, 256u32),
                                            256u32,
                                            &__args,
                                        )
                                    }?;
                                }
                            }
                            if true && (1i64) <= t && t < (T) {
                                let __points: usize = 1usize * ((H).max(0) as usize);
                                if __points > 0 {
                                    let __out = __own_h.arg_mut();
                                    let __args = [
                                        __out,
                                        x.arg(),
                                        __rt::cuda::Arg::i64(x.shape()[0] as i64),
                                        __rt::cuda::Arg::i64(x.shape()[1] as i64),
                                        w.arg(),
                                        __rt::cuda::Arg::i64(w.shape()[0] as i64),
                                        __rt::cuda::Arg::i64(w.shape()[1] as i64),
                                        (&__own_h).arg(),
                                        __rt::cuda::Arg::i64((&__own_h).shape()[0] as i64),
                                        __rt::cuda::Arg::i64((&__own_h).shape()[1] as i64),
                                        __rt::cuda::Arg::i64(H),
                                        __rt::cuda::Arg::i64(t),
                                        __rt::cuda::Arg::i64(__own_h.shape()[1] as i64),
                                        __status.arg(),
                                    ];
                                    unsafe {
                                        dev.launch(
                                            &__K1,
                                            dev.grid_for(__points as u64, 256u32),
                                            256u32,
                                            &__args,
                                        )
                                    }?;
                                }
                            }
                            t += 1;
                        }
                    }
                }
                let h = &__own_h;
                __rt::shape::check_result_dim("rnn", 0, "T", T, h.shape()[0])?;
                let __result = __own_h;
                __status
                    .check(
                        "rnn",
                        &[
                            __rt::cuda::Site::Index("x", 0),
                            __rt::cuda::Site::Index("x", 1),
                            __rt::cuda::Site::Index("x", 0),
                            __rt::cuda::Site::Index("x", 1),
                        ],
                    )?;
                Ok(__result)
            }
        "##]],
    );
}

#[test]
fn gradient_and_scalar_result() {
    check_kernels(
        r#"
        use std::ml::relu;
        #[device(cuda)]
        pub fn dense_grad(x: [f32; B, I], w: [f32; I, O], b: [f32; O], t: [f32; B, O]) -> ([f32; I, O], f32) {
            let y[n, o] = relu(sum[i](x[n, i] * w[i, o]) + b[o]);
            let loss = sum[n, o]((y[n, o] - t[n, o]) ** 2) / (B * O) as f32;
            (@loss / @w, loss)
        }
        "#,
        expect![[r#"
            // einlang: kernel `dense_grad_k0` of `dense_grad`
            extern "C" __global__ void dense_grad_k0(float* __restrict__ __out, const float* __restrict__ b, long long __d0_b, const float* __restrict__ y_pre_mm, long long __d0_y_pre_mm, long long __d1_y_pre_mm, long long B, long long O, __ein_u64* __status) {
                const long long __n = (B) * (O);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long o = 0LL + __ein_split(&__r, (O));
                    const long long n = 0LL + __r;
                    __out[__p] = (y_pre_mm[(n) * __d1_y_pre_mm + o] + b[o]);
                }
            }
            // einlang: kernel `dense_grad_k1` of `dense_grad`
            extern "C" __global__ void dense_grad_k1(float* __restrict__ __out, const float* __restrict__ b, long long __d0_b, const float* __restrict__ y_pre_mm, long long __d0_y_pre_mm, long long __d1_y_pre_mm, long long B, long long O, __ein_u64* __status) {
                const long long __n4 = (((B)) * ((O))) / 4;
                #pragma unroll 4
                for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; __p4 += (long long)gridDim.x * blockDim.x) {
                    const long long __p = __p4 * 4;
                    long long __rr = __p4;
                    const long long __q = __ein_split(&__rr, ((O)) / 4) * 4;
                    long long __r = __rr;
                    const long long n = 0LL + __r;
                    float4 __o;
                        const float4 __v1 = __ldg((const float4*)(y_pre_mm + ((n) * __d1_y_pre_mm + __q)));
                        const float4 __v2 = __ldg((const float4*)(b + (__q)));
                        { const long long o = __q + 0; __o.x = (__v1.x + __v2.x); }
                        { const long long o = __q + 1; __o.y = (__v1.y + __v2.y); }
                        { const long long o = __q + 2; __o.z = (__v1.z + __v2.z); }
                        { const long long o = __q + 3; __o.w = (__v1.w + __v2.w); }
                    *(float4*)(__out + __p) = __o;
                }
            }
            // einlang: kernel `dense_grad_k2` of `dense_grad`
            static __device__ float __ein_fn_relu_f32_dbbfe406(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void dense_grad_k2(float* __restrict__ __out, const float* __restrict__ y_pre, long long __d0_y_pre, long long __d1_y_pre, long long B, long long O, __ein_u64* __status) {
                const long long __n = (B) * (O);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long o_2 = 0LL + __ein_split(&__r, (O));
                    const long long n_2 = 0LL + __r;
                    __out[__p] = __ein_fn_relu_f32_dbbfe406(y_pre[(n_2) * __d1_y_pre + o_2], __status);
                }
            }
            // einlang: kernel `dense_grad_k3` of `dense_grad`
            static __device__ float __ein_fn_relu_f32_dbbfe406(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void dense_grad_k3(float* __restrict__ __out, const float* __restrict__ y_pre, long long __d0_y_pre, long long __d1_y_pre, long long B, long long O, __ein_u64* __status) {
                const long long __n4 = (((B)) * ((O))) / 4;
                #pragma unroll 4
                for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; __p4 += (long long)gridDim.x * blockDim.x) {
                    const long long __p = __p4 * 4;
                    long long __rr = __p4;
                    const long long __q = __ein_split(&__rr, ((O)) / 4) * 4;
                    long long __r = __rr;
                    const long long n_2 = 0LL + __r;
                    float4 __o;
                        const float4 __v1 = __ldg((const float4*)(y_pre + ((n_2) * __d1_y_pre + __q)));
                        { const long long o_2 = __q + 0; __o.x = __ein_fn_relu_f32_dbbfe406(__v1.x, __status); }
                        { const long long o_2 = __q + 1; __o.y = __ein_fn_relu_f32_dbbfe406(__v1.y, __status); }
                        { const long long o_2 = __q + 2; __o.z = __ein_fn_relu_f32_dbbfe406(__v1.z, __status); }
                        { const long long o_2 = __q + 3; __o.w = __ein_fn_relu_f32_dbbfe406(__v1.w, __status); }
                    *(float4*)(__out + __p) = __o;
                }
            }
            // einlang: kernel `dense_grad_k4` of `dense_grad`
            static __device__ float __ein_fn_relu_f32_dbbfe406(float x, __ein_u64* __status) {
                return fmaxf(x, 0.0f);
            }
            extern "C" __global__ void dense_grad_k4(float* __restrict__ __out, const float* __restrict__ y_pre, long long __d0_y_pre, long long __d1_y_pre, long long B, long long O, __ein_u64* __status) {
                const long long __n = (B) * (O);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[__p] = __ein_fn_relu_f32_dbbfe406(y_pre[__p], __status);
                }
            }
            // einlang: kernel `dense_grad_k5` of `dense_grad`
            extern "C" __global__ void dense_grad_k5(float* __restrict__ __out, const float* __restrict__ t, long long __d0_t, long long __d1_t, const float* __restrict__ y, long long __d0_y, long long __d1_y, long long B, long long O, __ein_u64* __status) {
                    __shared__ float __sh2[32];
                    float __red1;
                    {
                        float __acc = (float)(0);
                        #pragma unroll 4
                        for (long long __q = threadIdx.x; __q < (B) * (O); __q += blockDim.x) {
                            long long __r = __q;
                            const long long o_3 = 0LL + __ein_split(&__r, (O));
                            const long long n_3 = 0LL + __r;
                            do { __acc = __acc + __ein_powi<float>((y[(n_3) * __d1_y + o_3] - t[(n_3) * __d1_t + o_3]), (long long)(((int)2ULL))); } while (false);
                        }
                        for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                        if ((threadIdx.x & 31) == 0) __sh2[threadIdx.x >> 5] = __acc;
                        __syncthreads();
                        if (threadIdx.x < 32) {
                            __acc = threadIdx.x < (blockDim.x >> 5) ? __sh2[threadIdx.x] : (float)(0);
                            for (int __s = 16; __s > 0; __s >>= 1) { __acc = __acc + __ein_shfl(__acc, __s); }
                            if (threadIdx.x == 0) __sh2[0] = __acc;
                        }
                        __syncthreads();
                        __red1 = __sh2[0];
                        __syncthreads();
                    }
                if (blockIdx.x == 0 && threadIdx.x == 0) {
                    __out[0] = (__red1 / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O))))));
                }
            }
            // einlang: kernel `dense_grad_k6` of `dense_grad`
            extern "C" __global__ void dense_grad_k6(float* __restrict__ __out, const float* __restrict__ t, long long __d0_t, long long __d1_t, const float* __restrict__ y_pre, long long __d0_y_pre, long long __d1_y_pre, const float* __restrict__ y, long long __d0_y, long long __d1_y, long long B, long long O, __ein_u64* __status) {
                const long long __n = (B) * (O);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    long long __r = __p;
                    const long long p1_2 = 0LL + __ein_split(&__r, (O));
                    const long long p0_2 = 0LL + __r;
                    __out[__p] = (((1.0f / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O)))))) * (2.0f * (y[(p0_2) * __d1_y + p1_2] - t[(p0_2) * __d1_t + p1_2]))) * ((y_pre[(p0_2) * __d1_y_pre + p1_2] > 0.0f) ? 1.0f : 0.0f));
                }
            }
            // einlang: kernel `dense_grad_k7` of `dense_grad`
            extern "C" __global__ void dense_grad_k7(float* __restrict__ __out, const float* __restrict__ t, long long __d0_t, long long __d1_t, const float* __restrict__ y_pre, long long __d0_y_pre, long long __d1_y_pre, const float* __restrict__ y, long long __d0_y, long long __d1_y, long long B, long long O, __ein_u64* __status) {
                const long long __n4 = (((B)) * ((O))) / 4;
                #pragma unroll 4
                for (long long __p4 = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p4 < __n4; __p4 += (long long)gridDim.x * blockDim.x) {
                    const long long __p = __p4 * 4;
                    long long __rr = __p4;
                    const long long __q = __ein_split(&__rr, ((O)) / 4) * 4;
                    long long __r = __rr;
                    const long long p0_2 = 0LL + __r;
                    float4 __o;
                        const float4 __v1 = __ldg((const float4*)(y + ((p0_2) * __d1_y + __q)));
                        const float4 __v2 = __ldg((const float4*)(t + ((p0_2) * __d1_t + __q)));
                        const float4 __v3 = __ldg((const float4*)(y_pre + ((p0_2) * __d1_y_pre + __q)));
                        { const long long p1_2 = __q + 0; __o.x = (((1.0f / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O)))))) * (2.0f * (__v1.x - __v2.x))) * ((__v3.x > 0.0f) ? 1.0f : 0.0f)); }
                        { const long long p1_2 = __q + 1; __o.y = (((1.0f / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O)))))) * (2.0f * (__v1.y - __v2.y))) * ((__v3.y > 0.0f) ? 1.0f : 0.0f)); }
                        { const long long p1_2 = __q + 2; __o.z = (((1.0f / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O)))))) * (2.0f * (__v1.z - __v2.z))) * ((__v3.z > 0.0f) ? 1.0f : 0.0f)); }
                        { const long long p1_2 = __q + 3; __o.w = (((1.0f / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O)))))) * (2.0f * (__v1.w - __v2.w))) * ((__v3.w > 0.0f) ? 1.0f : 0.0f)); }
                    *(float4*)(__out + __p) = __o;
                }
            }
            // einlang: kernel `dense_grad_k8` of `dense_grad`
            extern "C" __global__ void dense_grad_k8(float* __restrict__ __out, const float* __restrict__ t, long long __d0_t, long long __d1_t, const float* __restrict__ y_pre, long long __d0_y_pre, long long __d1_y_pre, const float* __restrict__ y, long long __d0_y, long long __d1_y, long long B, long long O, __ein_u64* __status) {
                const long long __n = (B) * (O);
                #pragma unroll 4
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[__p] = (((1.0f / ((float)(((long long)((__ein_u64)(B) * (__ein_u64)(O)))))) * (2.0f * (y[__p] - t[__p]))) * ((y_pre[__p] > 0.0f) ? 1.0f : 0.0f));
                }
            }
        "#]],
    );
}

#[test]
fn device_functions_need_the_feature() {
    check_error(
        r#"
        #[device(cuda)]
        pub fn twice(x: [f32; N]) -> [f32; N] { let y[i] = 2.0 * x[i]; y }
        "#,
        &crate::Options::default(),
        expect![[r#"
            `#[device(cuda)]` needs the cargo feature `cuda` of `einlang`
             = help: enable it: `einlang = { version = "0.1", features = ["cuda"] }`"#]],
    );
}

#[test]
fn unsupported_constructs_are_reported_at_the_function() {
    check_error(
        r#"
        #[device(cuda)]
        pub fn noisy(x: [f32; N]) -> [f32; N] {
            print(x[0]);
            assert(N > 0, "not empty");
            let y[i] = x[i];
            y
        }
        "#,
        &options(),
        expect!["`#[device(cuda)]` does not support `print` in device code yet"],
    );
}

#[test]
fn the_digits_mlp_training_step_runs_on_the_device() {
    let src = r#"
        use std::math::tanh;
        use std::ml::log_softmax;
        pub fn logits(x: [f32; B, I], w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C]) -> [f32; B, C] {
            let h[n, j] = tanh(sum[i](x[n, i] * w1[i, j]) + b1[j]);
            let z[n, c] = sum[j](h[n, j] * w2[j, c]) + b2[c];
            z
        }
        pub fn batch_loss(
            x: [f32; B, I], labels: [i64; B],
            w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
        ) -> f32 {
            let lp = log_softmax(logits(x, w1, b1, w2, b2));
            let l = -sum[n](lp[n, labels[n]]) / (B as f32);
            l
        }
        #[device(cuda)]
        pub fn sgd_step(
            x: [f32; B, I], labels: [i64; B],
            w1: [f32; I, H], b1: [f32; H], w2: [f32; H, C], b2: [f32; C],
            lr: f32,
        ) -> ([f32; I, H], [f32; H], [f32; H, C], [f32; C], f32) {
            let l = batch_loss(x, labels, w1, b1, w2, b2);
            let (gw1, gb1, gw2, gb2) = (@l / @w1, @l / @b1, @l / @w2, @l / @b2);
            (w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2, l)
        }
    "#;
    let text = kernels(src);
    assert!(!text.contains("unsupported"), "{text}");
    // The forward pass, the loss (one thread), softmax's backward pass with
    // its argmax, the parameter updates.
    assert!(text.contains("tanhf(") && text.contains("__found"), "{text}");
}

#[test]
fn a_host_function_calling_a_device_function_is_an_error() {
    check_error(
        r#"
        #[device(cuda)]
        pub fn twice(x: [f32; N]) -> [f32; N] { let y[i] = 2.0 * x[i]; y }
        pub fn host(x: [f32; N]) -> [f32; N] { twice(x) }
        "#,
        &options(),
        expect![[r#"
            the device function `twice` is called from host code (`host`)
             = note: a `#[device(cuda)]` function takes a `&einlang::cuda::Device` first and is called from Rust"#]],
    );
}

#[test]
fn a_dynamic_program_in_a_circular_buffer() {
    check_kernels(
        r#"
        use std::math::min;
        #[device(cuda)]
        pub fn distance(a: [i32; N], b: [i32; M]) -> i32 {
            let d[0, j in 0..M + 1] = j as i32;
            let d[i in 1..N + 1, 0] = i as i32;
            let d[i in 1..N + 1, j in 1..M + 1] =
                min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }));
            d[N, M]
        }
        "#,
        expect![[r#"
            // einlang: kernel `distance_k0` of `distance`
            extern "C" __global__ void distance_k0(int* __out, long long i, long long j, long long __x1, __ein_u64* __status) {
                const long long __n = 1LL;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((((i)) & 1LL)) * __x1 + (j)] = ((int)(j));
                }
            }
            // einlang: kernel `distance_k1` of `distance`
            extern "C" __global__ void distance_k1(int* __out, long long i, long long j, long long __x1, __ein_u64* __status) {
                const long long __n = 1LL;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((((i)) & 1LL)) * __x1 + (j)] = ((int)(i));
                }
            }
            // einlang: kernel `distance_k2` of `distance`
            extern "C" __global__ void distance_k2(int* __out, const int* a, long long __d0_a, const int* b, long long __d0_b, const int* d, long long __d0_d, long long __d1_d, long long i, long long j, long long __x1, __ein_u64* __status) {
                const long long __n = 1LL;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((((i)) & 1LL)) * __x1 + (j)] = [&]() -> int { const int __a = [&]() -> int { const int __a = ((int)((__ein_u64)(d[(((((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))) & 1LL)) * __d1_d + j]) + (__ein_u64)(((int)1ULL)))); const int __b = ((int)((__ein_u64)(d[(((i) & 1LL)) * __d1_d + ((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) + (__ein_u64)(((int)1ULL)))); return __a < __b ? __a : __b; }(); const int __b = ((int)((__ein_u64)(d[(((((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))) & 1LL)) * __d1_d + ((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) + (__ein_u64)(((a[((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))] == b[((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) ? ((int)0ULL) : ((int)1ULL))))); return __a < __b ? __a : __b; }();
                }
            }
            // einlang: kernel `distance_k3` of `distance`
            extern "C" __global__ void distance_k3(int* __out, long long __outer, long long __along, long long __inner, long long __slot, __ein_u64* __status) {
                const long long __n = __outer * __inner;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((__p / __inner) * __along + __slot) * __inner + __p % __inner] = (int)0;
                }
            }
            // einlang: kernel `distance_k4` of `distance`
            extern "C" __global__ void distance_k4(int* __restrict__ __out, const int* __restrict__ d, long long __d0_d, long long __d1_d, long long N, long long M, __ein_u64* __status) {
                if (blockIdx.x == 0 && threadIdx.x == 0) {
                    __out[0] = d[(((N) & 1LL)) * __d1_d + M];
                }
            }
        "#]],
    );
}

#[test]
fn a_dynamic_program_walks_anti_diagonals() {
    check_kernels(
        r#"
        use std::math::min;
        #[device(cuda)]
        pub fn table(a: [i32; N], b: [i32; M]) -> [i32; N + 1, M + 1] {
            let d[0, j in 0..M + 1] = j as i32;
            let d[i in 1..N + 1, 0] = i as i32;
            let d[i in 1..N + 1, j in 1..M + 1] =
                min(min(d[i - 1, j] + 1, d[i, j - 1] + 1), d[i - 1, j - 1] + (if a[i - 1] == b[j - 1] { 0 } else { 1 }));
            d
        }
        "#,
        expect![[r#"
            // einlang: kernel `table_k0` of `table`
            extern "C" __global__ void table_k0(int* __out, long long i, long long j, long long __x1, __ein_u64* __status) {
                const long long __n = 1LL;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((i)) * __x1 + (j)] = ((int)(j));
                }
            }
            // einlang: kernel `table_k1` of `table`
            extern "C" __global__ void table_k1(int* __out, long long i, long long j, long long __x1, __ein_u64* __status) {
                const long long __n = 1LL;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((i)) * __x1 + (j)] = ((int)(i));
                }
            }
            // einlang: kernel `table_k2` of `table`
            extern "C" __global__ void table_k2(int* __out, const int* a, long long __d0_a, const int* b, long long __d0_b, const int* d, long long __d0_d, long long __d1_d, long long i, long long j, long long __x1, __ein_u64* __status) {
                const long long __n = 1LL;
                for (long long __p = (long long)blockIdx.x * blockDim.x + threadIdx.x; __p < __n; __p += (long long)gridDim.x * blockDim.x) {
                    __out[((i)) * __x1 + (j)] = [&]() -> int { const int __a = [&]() -> int { const int __a = ((int)((__ein_u64)(d[(((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))) * __d1_d + j]) + (__ein_u64)(((int)1ULL)))); const int __b = ((int)((__ein_u64)(d[(i) * __d1_d + ((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) + (__ein_u64)(((int)1ULL)))); return __a < __b ? __a : __b; }(); const int __b = ((int)((__ein_u64)(d[(((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))) * __d1_d + ((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) + (__ein_u64)(((a[((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))] == b[((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) ? ((int)0ULL) : ((int)1ULL))))); return __a < __b ? __a : __b; }();
                }
            }
            // einlang: kernel `table_k3` of `table`
            extern "C" __global__ void table_k3(int* __out, const int* a, long long __d0_a, const int* b, long long __d0_b, const int* d, long long __d0_d, long long __d1_d, long long N, long long M, long long d_axis0_len, long long d_axis1_len, long long __x1, __ein_u64* __status) {
                const long long __n0 = (d_axis0_len) - 0LL, __n1 = (d_axis1_len) - 0LL;
                for (long long __d = 0; __n0 > 0 && __n1 > 0 && __d < __n0 + __n1 - 1; ++__d) {
                    const long long __lo = __d - (__n1 - 1) > 0 ? __d - (__n1 - 1) : 0;
                    const long long __hi = __d < __n0 - 1 ? __d : __n0 - 1;
                    for (long long __c = __lo + threadIdx.x; __c <= __hi; __c += blockDim.x) {
                        const long long i = 0LL + __c;
                        const long long j = 0LL + (__d - __c);
                        if ((i) == 0LL && 0LL <= (j) && (j) < (M + 1LL)) {
                            for (long long __p = 0; __p < 1LL; ++__p) {
                                __out[((i)) * __x1 + (j)] = ((int)(j));
                            }
                        }
                        if ((1LL) <= (i) && (i) < (N + 1LL) && (j) == 0LL) {
                            for (long long __p = 0; __p < 1LL; ++__p) {
                                __out[((i)) * __x1 + (j)] = ((int)(i));
                            }
                        }
                        if ((1LL) <= (i) && (i) < (N + 1LL) && (1LL) <= (j) && (j) < (M + 1LL)) {
                            for (long long __p = 0; __p < 1LL; ++__p) {
                                __out[((i)) * __x1 + (j)] = [&]() -> int { const int __a = [&]() -> int { const int __a = ((int)((__ein_u64)(d[(((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))) * __d1_d + j]) + (__ein_u64)(((int)1ULL)))); const int __b = ((int)((__ein_u64)(d[(i) * __d1_d + ((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) + (__ein_u64)(((int)1ULL)))); return __a < __b ? __a : __b; }(); const int __b = ((int)((__ein_u64)(d[(((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))) * __d1_d + ((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) + (__ein_u64)(((a[((long long)((__ein_u64)(i) - (__ein_u64)(((long long)1ULL))))] == b[((long long)((__ein_u64)(j) - (__ein_u64)(((long long)1ULL))))]) ? ((int)0ULL) : ((int)1ULL))))); return __a < __b ? __a : __b; }();
                            }
                        }
                    }
                    __syncthreads();
                }
            }
        "#]],
    );
}

#[test]
fn asserts_are_checked_on_the_host() {
    check_glue(
        r#"
        #[device(cuda)]
        pub fn positive(x: [f32; N]) -> f32 {
            assert(sum[i](x[i]) > 0.0, "the sum is positive");
            N as f32
        }
        "#,
        "positive",
        expect![[r##"
            #[allow(
                non_snake_case,
                unused_variables,
                unused_mut,
                unused_parens,
                unused_braces,
                unused_imports,
                unused_unsafe,
                dead_code,
                clippy::all,
                clippy::pedantic
            )]
            pub fn positive(
                dev: &::einlang::__private::cuda::Device,
                x: &::einlang::__private::cuda::Tensor<f32, ::einlang::__private::ndarray::Ix1>,
            ) -> ::core::result::Result<f32, ::einlang::__private::Error> {
                use ::einlang::__private as __rt;
                use ::einlang::__private::ndarray as __nd;
                const __K0: __rt::cuda::KernelInfo = __rt::cuda::KernelInfo {
                    name: "positive_k0",
                    function: "positive",
                    source: "<source of positive_k0>",
                };
                __rt::cuda::inventory::submit! {
                    __K0
                }
                x.check_device("positive", "x", dev)?;
                let N: i64 = x.shape()[0] as i64;
                let __status = dev.status(false)?;
                if !({
                    let mut __scalar = __rt::cuda::Tensor::<
                        bool,
                        __nd::Ix0,
                    >::zeros(dev, __nd::Ix0())?;
                    let __points: usize = 1usize;
                    if __points > 0 {
                        let __out = __scalar.arg_mut();
                        let __args = [
                            __out,
                            x.arg(),
                            __rt::cuda::Arg::i64(x.shape()[0] as i64),
                            __rt::cuda::Arg::i64(N),
                            __status.arg(),
                        ];
                        unsafe {
                            dev.launch(&__K0, dev.grid_for(__points as u64, 256u32), 256u32, &__args)
                        }?;
                    }
                    __status.check("positive", &[])?;
                    __scalar.into_scalar()?
                }) {
                    return ::core::result::Result::Err(
                        __rt::shape::assert_failed("positive", "the sum is positive"),
                    );
                }
                let __result = (N as f32);
                __status.check("positive", &[])?;
                Ok(__result)
            }
        "##]],
    );
}

#[test]
fn row_pipelines_in_any_form_are_one_kernel_over_rows() {
    // Softmax with the maximum and sum written inside, and a layer norm:
    // each becomes one row kernel (a thread-, a warp- and a block-per-row
    // variant, the last two also four-wide), the centered row recomputed
    // where it is read.
    for src in [
        r#"
        use std::math::exp;
        #[device(cuda)]
        pub fn natural(x: [f32; B, C]) -> [f32; B, C] {
            let e[n, c] = exp(x[n, c] - max[k](x[n, k]));
            let y[n, c] = e[n, c] / sum[k](e[n, k]);
            y
        }
        "#,
        r#"
        use std::math::sqrt;
        #[device(cuda)]
        pub fn norm(x: [f32; B, C]) -> [f32; B, C] {
            let mu[n] = sum[c](x[n, c]) / (C as f32);
            let d[n, c] = x[n, c] - mu[n];
            let v[n] = sum[c](d[n, c] * d[n, c]) / (C as f32);
            let y[n, c] = d[n, c] / sqrt(v[n] + 1e-5);
            y
        }
        "#,
    ] {
        let text = kernels(src);
        assert_eq!(text.matches("__global__").count(), 5, "{text}");
        // Four-wide twins of the warp and block kernels: every read of
        // `x` (but in the unused row lambdas) and the store of a row's
        // points are four-wide.
        assert_eq!(text.matches("*(float4*)(__out + __p * __m + __q) = __o;").count(), 2, "{text}");
        let wide: String = text.split("// einlang: kernel").filter(|k| k.contains("float4")).collect();
        assert!(wide.lines().filter(|l| l.contains("x[(")).all(|l| l.trim_start().starts_with("auto ")), "{wide}");
        assert!(text.contains("__q = (threadIdx.x & 31); __q < __m; __q += 32"), "{text}");
        assert!(text.contains("for (long long __p = blockIdx.x; __p < __n; __p += gridDim.x)"), "{text}");
    }
}

#[test]
fn four_wide_loads_are_only_reads_every_lane_makes() {
    // `x[n - 1, k]` is read only when `n > 0`: never loaded ahead of its
    // guard; `x[n, k]` is loaded four-wide.
    let text = kernels(
        r#"
        #[device(cuda)]
        pub fn shifted(x: [f32; B, C]) -> [f32; B, C] {
            let y[n, c] = x[n, c] / (1.0 + sum[k](x[n, k] * (if n > 0 { x[n - 1, k] } else { 1.0 })));
            y
        }
        "#,
    );
    let loads: Vec<&str> = text.lines().filter(|l| l.contains("__ldg")).collect();
    assert!(!loads.is_empty(), "{text}");
    assert!(loads.iter().all(|l| !l.contains(" - ")), "{text}");
    assert!(text.contains("x[(((long long)((__ein_u64)(n) - "), "{text}");
}

/// 16-bit definitions load and store four elements at once as `ushort4`
/// (eight bytes): elementwise, where the host prefers the four-wide kernel
/// to the flat one (two bytes a thread), and in softmax's rows.
#[test]
fn half_precision_kernels_move_four_elements_at_once() {
    let src = r#"
        use std::math::exp;
        #[device(cuda)]
        pub fn affine(x: [f16; R, C]) -> [f16; R, C] {
            let y[i, j] = 2.0 * x[i, j] + 1.0;
            y
        }
        #[device(cuda)]
        pub fn softmax(x: [bf16; R, C]) -> [bf16; R, C] {
            let e[i, j] = exp(x[i, j] - max[k](x[i, k]));
            let y[i, j] = e[i, j] / sum[k](e[i, k]);
            y
        }
    "#;
    let text = kernels(src);
    let stores = text.lines().filter(|l| l.contains("*(ushort4*)(__out + __p) = __o;")).count();
    assert_eq!(stores, 1, "{text}");
    assert!(text.contains("*(ushort4*)(__out + __p * __m + __q) = __o;"), "{text}");
    assert!(text.contains("= __ldg((const ushort4*)(x + ((i) * __d1_x + __q)));"), "{text}");
    assert!(text.contains("= __ldg((const ushort4*)(x + ((i_2) * __d1_x + __q)));"), "{text}");
    assert!(!text.contains("float4"), "{text}");
    // The host launches the four-wide kernel when it may, before the flat
    // one.
    let compiled = crate::compile_str(src, &options()).expect("compiles");
    let p = &compiled.ir;
    let fns = crate::codegen::host::FnIdents::of(p);
    let (id, f) = p.functions().find(|(_, f)| f.name == "affine").expect("the function exists");
    let e = emit_function(f, id, p, &fns, &options()).unwrap_or_else(|e| panic!("{e:?}"));
    let glue = e.tokens.to_string();
    let quad =
        e.kernels.iter().find(|(_, k)| k.contains("ushort4 __o")).map(|(n, _)| n.clone()).expect("a quad kernel");
    let flat = e.kernels.iter().find(|(_, k)| k.contains("x[__p]")).map(|(n, _)| n.clone()).expect("a flat kernel");
    // (Kernel `affine_kN` is the constant `__KN` of the glue.)
    let konst = |name: &str| format!("& __K{}", name.rsplit("_k").next().unwrap_or(""));
    let (at_quad, at_flat) = (glue.find(&konst(&quad)), glue.find(&konst(&flat)));
    assert!(at_quad.is_some() && at_flat.is_some() && at_quad < at_flat, "{glue}");
}

/// A sharded device function: the entry's agreement over the `World`, the
/// gradient all-reduced in place through NCCL, the loss (a host scalar)
/// over MPI, each after the device's status and an agreement.
#[test]
fn a_sharded_device_function_all_reduces_on_the_device() {
    let src = "#[shard(B)]
        #[device(cuda)]
        pub fn lsq(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32) {
            let y[n] = sum[i](x[n, i] * w[i]);
            let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
            (@l / @w, l)
        }";
    let compiled = crate::compile_str(src, &options()).unwrap_or_else(|_| panic!("{src} compiles"));
    let p = &compiled.ir;
    let fns = crate::codegen::host::FnIdents::of(p);
    let (id, f) = p.functions().find(|(_, f)| f.name == "lsq").expect("the function exists");
    let glue = match emit_function(f, id, p, &fns, &options()) {
        Ok(e) => e.tokens.to_string(),
        Err(e) => panic!("{e:?}"),
    };
    assert!(glue.contains("__world : & :: einlang :: __private :: dist :: World"), "{glue}");
    assert!(glue.contains("dist :: agree_entry"), "{glue}");
    assert!(glue.contains("cuda :: nccl :: all_reduce (__world"), "{glue}");
    assert!(glue.contains("__world . all_reduce_one"), "{glue}");
    assert!(glue.contains("__world . begin ()") && glue.contains("__world . finish"), "{glue}");
}

/// A sharded device recurrence whose steps read the step before at
/// offsets along the sharded axis: at every step, before the clauses that
/// read them, the edge rows are packed on the device, exchanged through
/// host memory (`dist::halo_packed`) and unpacked into the halos, and the
/// steps run one launch at a time (no persistent kernel).
#[test]
fn a_sharded_device_stencil_over_time_exchanges_its_halo_rows_every_step() {
    let src = "#[shard(N)]
        #[device(cuda)]
        pub fn heat(u0: [f32; N, M], steps: i64) -> [f32; N, M] {
            let u[0, i, j] = u0[i, j];
            let u[t in 1..steps, i in 1..N - 1, j] = u[t - 1, i - 1, j] + u[t - 1, i + 1, j];
            let last[i, j] = u[steps - 1, i, j];
            last
        }";
    let compiled = crate::compile_str(src, &options()).unwrap_or_else(|_| panic!("{src} compiles"));
    let p = &compiled.ir;
    let fns = crate::codegen::host::FnIdents::of(p);
    let (id, f) = p.functions().find(|(_, f)| f.name == "heat").expect("the function exists");
    let e = match emit_function(f, id, p, &fns, &options()) {
        Ok(e) => e,
        Err(e) => panic!("{e:?}"),
    };
    let glue = e.tokens.to_string().replace(' ', "");
    // One exchange a step (the interior clause's), inside the step loop,
    // of one row each way along axis 1 of the stored steps (axis 0 is
    // time).
    assert_eq!(glue.matches("dist::halo_packed(").count(), 1, "{glue}");
    assert!(glue.contains("slab_geometry(\"heat\",__own_u.shape(),0,1)"), "{glue}");
    assert!(glue.contains("(1,1,__per)"), "{glue}");
    let step_loop = glue.find("while").expect("a loop of steps");
    assert!(glue.find("dist::halo_packed(").unwrap() > step_loop, "{glue}");
    // The pack and unpack kernels: the rows the neighbours want, out of
    // the slab of the step before, and the rows received into its halos.
    let sources: Vec<&String> = e.kernels.iter().map(|(_, s)| s).collect();
    let pack = sources.iter().find(|s| s.contains("__first_b")).expect("a pack kernel");
    assert!(pack.contains("__out[__p] = __u[__base + __a * __sA + __b * __sB + __r * __sR + __c];"), "{pack}");
    let unpack = sources.iter().find(|s| s.contains("__before")).expect("an unpack kernel");
    assert!(unpack.contains("const long long __r = __k < __lo ? __k : __local + __k;"), "{unpack}");
    // Launched once per step: no persistent kernel walks the steps.
    assert!(!sources.iter().any(|s| s.contains("__syncthreads")), "{sources:?}");
}
