//! What the Rust back end makes of source programs: the loop shapes it
//! chooses from the IR's structure (blocks of rows for transposed reads,
//! products written into their rows, slice copies, reductions split across
//! threads), checked on the generated text with whitespace removed.

/// The Rust generated for `src` in one form (`Options::baseline_only`: no
/// AVX2 twin), with all whitespace removed.
fn compact_rust(src: &str) -> String {
    let options = crate::Options { baseline_only: true, ..Default::default() };
    let Ok(compiled) = crate::compile_str(src, &options) else { panic!("the program compiles") };
    compiled.rust.to_string().split_whitespace().collect()
}

/// A rank-2 definition reading a tensor across its rows (a transpose) is
/// written a block of rows at a time, the column loop outside; one read
/// along its rows keeps the row at a time.
#[test]
fn transposed_reads_fill_blocks_of_rows() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn t(x: [f32; N, M]) -> [f32; M, N] {
            let y[j, i] = x[i, j] * 2.0;
            y
        }
        pub fn same(x: [f32; N, M]) -> [f32; N, M] {
            let y[i, j] = x[i, j] * 2.0;
            y
        }
    };
    let compiled = crate::test_support::compile_tokens(src);
    let rust: String = compiled.rust.to_string().split_whitespace().collect();
    let (t, same) = rust.split_at(rust.find("fn__same_body").expect("both functions are emitted"));
    assert!(t.contains("fill_uninit_rows_into(\"t\"") && t.contains(",16,__fill_y,&mut*__out0)"), "{t}");
    assert!(!same.contains("fill_uninit_rows"), "{same}");
}

/// A convolution without an epilogue writes each image's product straight
/// into its row of the output; with a bias the row adds it to a product
/// of its own. (`f64`: an `f32` stride-1 convolution runs the direct
/// kernel, `opt::conv`.)
#[test]
fn a_row_that_is_its_product_is_written_by_the_gemm() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn plain(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3]) -> [f64; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            y
        }
        pub fn biased(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3], b: [f64; O]) -> [f64; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
            y
        }
    };
    let compiled = crate::test_support::compile_tokens(src);
    let rust: String = compiled.rust.to_string().split_whitespace().collect();
    let (plain, biased) = rust.split_at(rust.find("fn__biased_body").expect("both functions are emitted"));
    assert!(plain.contains("gemm::matmul_into(\"plain\"") && !plain.contains("gemm::matmul(\"plain\""), "{plain}");
    assert!(biased.contains("gemm::matmul(\"biased\"") && !biased.contains("matmul_into"), "{biased}");
}

/// An `f32` convolution (valid with a bias, or padded by a guard)
/// is one call of the runtime's direct kernel, into the caller's buffer
/// when it is the result; a strided one passes its whole window.
#[test]
fn a_convolution_calls_the_direct_kernel() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn biased(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3], b: [f32; O]) -> [f32; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]) + b[o];
            y
        }
        pub fn strided(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H / 2, W / 2] {
            let y[n, o, i in 0..H / 2, j in 0..W / 2] = sum[c, r, s](
                if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                where ih = 2 * i + r - 1, iw = 2 * j + s - 1
            );
            y
        }
    };
    let compiled = crate::test_support::compile_tokens(src);
    let rust: String = compiled.rust.to_string().split_whitespace().collect();
    let (biased, strided) = rust.split_at(rust.find("fn__strided_body").expect("both functions are emitted"));
    // The result goes into the caller's buffer (`NAME_into`) or a new one.
    assert!(
        biased.contains(
            "dest::conv_into(\"biased\",\"y\",x.view(),k.view(),::core::option::Option::Some(b.view()),(0,0)"
        ),
        "{biased}"
    );
    // A literal stride: the kernel over the whole window.
    assert!(
        strided.contains("conv::Window{pad:(1,1),stride:(2,2),dilation:(1,1)}") && !strided.contains("gemm::"),
        "{strided}"
    );
}

/// A function whose result is a tensor has one body and two entry points:
/// the definition of its result fills the `Out` it is given
/// (`dest::*_into`: the caller's buffer from `NAME_into`, none from
/// `NAME`), its temporaries come from the pool as before; a product that
/// is the result goes through `dest::product_into`. A function with a
/// scalar result has no `_into` form.
#[test]
fn results_fill_the_callers_buffer_through_one_body() {
    let src: proc_macro2::TokenStream = quote::quote! {
        pub fn scaled(x: [f32; N]) -> [f32; N] {
            let t[i] = std::math::exp(x[i]);
            let y[i] = t[i] + t[N - 1 - i];
            y
        }
        pub fn product(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
            let c[i, j] = sum[k](a[i, k] * b[k, j]);
            c
        }
        pub fn total(x: [f32; N]) -> f32 {
            sum[i](x[i])
        }
    };
    let compiled = crate::test_support::compile_tokens(src);
    let rust: String = compiled.rust.to_string().split_whitespace().collect();
    let at = |s: &str| rust.find(s).unwrap_or_else(|| panic!("`{s}` is emitted: {rust}"));
    let (scaled, rest) = rust.split_at(at("fn__product_body"));
    assert!(scaled.contains("par::fill_uninit(\"scaled\""), "the temporary is a new tensor: {scaled}");
    assert!(scaled.contains("dest::fill_uninit_into(\"scaled\"") && scaled.contains("&mut*__out0"), "{scaled}");
    assert!(scaled.contains("pubfnscaled<'__a0>") && scaled.contains("pubfnscaled_into<'__a0,'__o0>"), "{scaled}");
    assert_eq!(scaled.matches("dest::fill_uninit_into").count(), scaled.matches("par::fill_uninit(").count());
    assert!(rest.contains("dest::product_into(\"product\""), "{rest}");
    assert!(!rust.contains("total_into") && !rust.contains("__total_body"), "{rust}");
}

/// A padded copy's rows (the packed columns of a convolution padded by a
/// guard) copy the run of the source row inside the guard as one slice;
/// the start of that slice is computed only when the run is not empty. A
/// strided read (`2 * j`) keeps the per-element loop. (`f64`: an `f32`
/// stride-1 convolution runs the direct kernel, `opt::conv`.)
#[test]
fn a_clipped_row_that_reads_along_its_axis_copies_a_slice() {
    let src = "
        pub fn padded(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3]) -> [f64; N, O, H, W] {
            let y[n, o, i in 0..H, j in 0..W] = sum[c, r, s](
                if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                where ih = i + r - 1, iw = j + s - 1
            );
            y
        }
        pub fn strided(x: [f32; N, C, H, W], k: [f32; O, C, 3, 3]) -> [f32; N, O, H / 2, W / 2] {
            let y[n, o, i in 0..H / 2, j in 0..W / 2] = sum[c, r, s](
                if ih >= 0 && ih < H && iw >= 0 && iw < W { x[n, c, ih, iw] * k[o, c, r, s] } else { 0.0 }
                where ih = 2 * i + r - 1, iw = 2 * j + s - 1
            );
            y
        }
    ";
    let rust = compact_rust(src);
    let (padded, strided) = rust.split_at(rust.find("pubfnstrided").expect("both functions are emitted"));
    assert!(padded.contains("if__a<__b{let__start:usize="), "{padded}");
    assert!(padded.contains("from_raw_parts(x.as_ptr().add(__start),__b-__a)"), "{padded}");
    assert!(!strided.contains("from_raw_parts"), "{strided}");
}

/// The packed columns of a valid convolution (`x[n, c, i + r, j + s]`,
/// no guard) copy each run of an image row as one slice; a transpose,
/// whose read does not walk the row's axis along the source's last axis,
/// keeps the per-element loop. (`f64`, as above.)
#[test]
fn a_row_that_copies_a_run_of_a_tensor_copies_a_slice() {
    let src = "
        pub fn valid(x: [f64; N, C, H, W], k: [f64; O, C, 3, 3]) -> [f64; N, O, H - 2, W - 2] {
            let y[n, o, i, j] = sum[c, r, s](x[n, c, i + r, j + s] * k[o, c, r, s]);
            y
        }
        pub fn transposed(x: [f32; H, W]) -> [f32; W, H] {
            let y[j, i] = x[i, j];
            y
        }
    ";
    let rust = compact_rust(src);
    let (valid, transposed) = rust.split_at(rust.find("pubfntransposed").expect("both functions are emitted"));
    assert!(valid.contains("let(__a,__b)=(0usize,"), "{valid}");
    assert!(valid.contains("from_raw_parts(x.as_ptr().add(__start),__b-__a)"), "{valid}");
    assert!(!transposed.contains("from_raw_parts"), "{transposed}");
}

/// A vector that reduces over the rows of its operands (`v[k] * a[k, j]`:
/// `v[k]` does not depend on `j`, so it does not keep `k` innermost) runs
/// the reduction's loop outside the vector's and lets the runtime split
/// it across threads (`fill_reduced`); a product along rows (`a[i, k] *
/// v[k]`) keeps the sum per element. A reduction computed once, in a
/// `let` or in the result's arithmetic, is `par::reduce`; one per element
/// is not.
#[test]
fn reductions_over_rows_and_scalar_reductions_split_across_threads() {
    let src = "
        pub fn vec_mat(v: [f32; K], a: [f32; K, M]) -> [f32; M] {
            let y[j] = sum[k](v[k] * a[k, j]);
            y
        }
        pub fn mat_vec(a: [f32; M, K], v: [f32; K]) -> [f32; M] {
            let y[i] = sum[k](a[i, k] * v[k]);
            y
        }
        pub fn total(x: [f32; N]) -> f32 {
            let s = sum[i](x[i]);
            s * 2.0 + max[i](x[i])
        }
    ";
    let rust = compact_rust(src);
    let (vec_mat, rest) = rust.split_at(rust.find("pubfnmat_vec").expect("every function is emitted"));
    let (mat_vec, total) = rest.split_at(rest.find("pubfntotal").expect("every function is emitted"));
    assert!(vec_mat.contains("__rt::par::fill_reduced(\"vec_mat\",Masusize,(0i64,K),"), "{vec_mat}");
    assert!(vec_mat.contains("forkin__from..__to{"), "{vec_mat}");
    assert!(!mat_vec.contains("fill_reduced") && !mat_vec.contains("par::reduce"), "{mat_vec}");
    // The `let`, and the maximum in the result's arithmetic.
    assert_eq!(total.matches("__rt::par::reduce(").count(), 2, "{total}");
    assert!(total.contains("lets:f32=__rt::par::reduce(0i64,N,"), "{total}");
}

/// A stencil whose border keeps its values (`if interior { .. } else {
/// u[i, j] }`) runs each row as three stretches: the border copied as
/// slices before and after, the interior without a test per element and
/// with every read unchecked (the guard `i + 1 < N` proves `u[i + 1, j]`).
/// The same `else` under a where-guard stays per element.
#[test]
fn a_guarded_definition_with_an_else_value_is_clipped() {
    let src = "
        pub fn heat(u: [f64; N, M], r: f64) -> [f64; N, M] {
            let v[i, j] = if i >= 1 && i + 1 < N && j >= 1 && j + 1 < M {
                u[i, j] + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j])
            } else {
                u[i, j]
            };
            v
        }
        pub fn guarded(u: [f64; N, M]) -> [f64; N, M] {
            let v[i, j] = if j + 1 < M { u[i, j + 1] } else { u[i, j] } where i + 1 < N;
            v
        }
    ";
    let rust = compact_rust(src);
    let (heat, guarded) = rust.split_at(rust.find("pubfnguarded").expect("both functions are emitted"));
    assert!(heat.contains("let(__a,__b)=(0usize,__a);"), "{heat}");
    assert!(heat.contains("let(__a,__b)=(__b,__row_v.len());"), "{heat}");
    assert_eq!(heat.matches("from_raw_parts(u.as_ptr().add(__start),__b-__a)").count(), 2, "{heat}");
    assert!(!heat.contains("check_index"), "{heat}");
    assert!(!guarded.contains("let(__a,__b)=(0usize,__a);"), "{guarded}");
}
