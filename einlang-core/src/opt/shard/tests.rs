use crate::ir::{Comm, Stmt};

/// The program lowered (the driver runs `shard::run` on it), or its
/// first error.
fn sharded(src: &str) -> Result<crate::ir::Program, String> {
    let ast = crate::syntax::parse_str(src).map_err(|d| d[0].message.clone())?;
    crate::driver::lower(ast, &crate::codegen::Options::default()).map(|l| l.ir).map_err(|d| d[0].message.clone())
}

fn comms(p: &crate::ir::Program) -> Vec<Comm> {
    p.fns[0].body.iter().filter_map(|s| if let Stmt::Comm(c) = s { Some(c.clone()) } else { None }).collect()
}

#[test]
fn a_gradient_over_the_batch_is_local_parts_and_one_all_reduce_each() {
    let p = sharded(
        "#[shard(B)]
        fn step(x: [f32; B, I], w: [f32; I], t: [f32; B]) -> ([f32; I], f32) {
            let y[n] = sum[i](x[n, i] * w[i]);
            let l = sum[n]((y[n] - t[n]) * (y[n] - t[n])) / (B as f32);
            (@l / @w, l)
        }",
    )
    .unwrap();
    let c = comms(&p);
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|c| matches!(c, Comm::AllReduce { op: crate::base::ops::RedOp::Sum, .. })));
    let parts = p.fns[0].shard.as_ref().and_then(|s| s.parts.as_ref()).unwrap();
    assert_eq!(p.fns[0].var(parts.local).source_name, "B_local");
    assert!(!parts.halo);
}

#[test]
fn a_stencil_over_time_exchanges_halos_in_its_steps() {
    let p = sharded(
        "#[shard(N)]
        fn heat(u0: [f64; N, M], steps: i64) -> [f64; N, M] {
            let u[0, i, j] = u0[i, j];
            let u[t in 1..steps, i in 1..N - 1, j] = u[t - 1, i - 1, j] + u[t - 1, i + 1, j];
            let last[i, j] = u[steps - 1, i, j];
            last
        }",
    )
    .unwrap();
    let rec = p.fns[0].body.iter().find_map(|s| if let Stmt::Recurrence(r) = s { Some(r) } else { None }).unwrap();
    // The step's clause in three: its interior rows after the start of
    // the exchange, its edge rows (below, above) after the wait.
    let preludes: Vec<_> = rec.clauses.iter().map(|c| &c.prelude[..]).collect();
    assert!(
        matches!(
            preludes[..],
            [[], [Stmt::Comm(Comm::HaloStart { lo: 1, hi: 1, axis: 1, .. })], [Stmt::Comm(Comm::HaloWait { .. })], []]
        ),
        "{preludes:?}"
    );
    assert!(p.fns[0].shard.as_ref().and_then(|s| s.parts.as_ref()).unwrap().halo);
}

#[test]
fn a_halo_reading_clause_splits_into_interior_and_edge_rows() {
    // Reads two rows below and one above: the interior starts two rows
    // into the block and ends one row before its end (storage rows:
    // 2 halo rows, the block, 1 halo row).
    let p = sharded(
        "#[shard(N)]
        fn f(u0: [f32; N], steps: i64) -> [f32; N] {
            let u[0, i] = u0[i];
            let u[t in 1..steps, i in 2..N - 1] = u[t - 1, i - 2] + u[t - 1, i + 1] + u[t - 1, i];
            let last[i] = u[steps - 1, i];
            last
        }",
    )
    .unwrap();
    let text = crate::ir::pretty::pretty_function(&p, &p.fns[0]);
    expect_test::expect![[r#"
        fn f(u0: tensor<f32, 1>, steps: i64) -> tensor<f32, 1> {
            bind N_local = u0.shape[0]
            extent u_axis0_len = max(1, steps) ("max(1, steps)")
            recurrence u[u_axis0_len, N_local + 3]: f32 window axis 0 slots 2 clear_steps
                sequential axis 0: t in 0..u_axis0_len
                clause [t, i] when [= 0] over [i in 2..N_local + 2] (cost 2) = read u0[i + -2] unchecked
                at each step of the next clause:
                    start halo exchange of u at axis 0 = t - 1i64, axis 1: 2 rows below, 1 above
                clause [t, i_2] when [in 1..steps] over [i_2 in min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)..min(min(N - 1, N_local + N_offset) - N_offset + 2, max(N_local + 1, min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)))] (cost 21) = ((read u[t - 1i64, i_2 + -2] unchecked) + (read u[t - 1i64, i_2 + 1] unchecked)) + (read u[t - 1i64, i_2] unchecked)
                at each step of the next clause:
                    wait for the halo exchange of u
                clause [t, i_4] when [in 1..steps] over [i_4 in max(2, N_offset) - N_offset + 2..min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)] (cost 21) = ((read u[t - 1i64, i_4 + -2] unchecked) + (read u[t - 1i64, i_4 + 1] unchecked)) + (read u[t - 1i64, i_4] unchecked)
                clause [t, i_5] when [in 1..steps] over [i_5 in min(min(N - 1, N_local + N_offset) - N_offset + 2, max(N_local + 1, min(min(N - 1, N_local + N_offset) - N_offset + 2, 4)))..min(N - 1, N_local + N_offset) - N_offset + 2] (cost 21) = ((read u[t - 1i64, i_5 + -2] unchecked) + (read u[t - 1i64, i_5 + 1] unchecked)) + (read u[t - 1i64, i_5] unchecked)
            tensor last[i_3 in 0..N_local]: f32 (cost 7) = read u[steps - 1i64, i_3 + 2] checked
            result last
        }
    "#]].assert_eq(&text);
}

#[test]
fn reads_at_offsets_of_known_range_extend_by_the_range() {
    // A convolution's rows through where-bound variables: two rows each
    // way for a kernel of five rows centred on the point.
    let p = sharded(
        "#[shard(H)]
        fn conv(x: [f32; H, W], k: [f32; 5, 3]) -> [f32; H, W] {
            let y[r in 0..H, s in 0..W] = sum[dr, ds](if iy >= 0 && iy < H && ix >= 0 && ix < W { x[iy, ix] } else { 0.0 } * k[dr, ds]) where iy = r + dr - 2, ix = s + ds - 1;
            y
        }",
    )
    .unwrap();
    let c = comms(&p);
    assert!(matches!(c[..], [Comm::ExtendStart { lo: 2, hi: 2, axis: 0, .. }]), "{c:?}");
    // A window read directly at `i + d`: rows after the block only.
    let p = sharded(
        "#[shard(N)]
        fn window(v: [f64; N]) -> [f64; N] {
            let y[i in 0..N] = sum[d in 0..4](if i + d < N { v[i + d] } else { 0.0 });
            y
        }",
    )
    .unwrap();
    let c = comms(&p);
    assert!(matches!(c[..], [Comm::ExtendStart { lo: 0, hi: 3, axis: 0, .. }]), "{c:?}");
}

#[test]
fn a_definition_reading_an_extended_copy_is_its_interior_rows_then_its_edge_rows() {
    let p = sharded(
        "#[shard(N)]
        fn lap(u: [f64; N, M]) -> [f64; N, M] {
            let v[i, j] = if i >= 1 && i + 1 < N { u[i - 1, j] + u[i + 1, j] - 2.0 * u[i, j] } else { 0.0 };
            v
        }",
    )
    .unwrap();
    let f = &p.fns[0];
    let at = f.body.iter().position(|s| matches!(s, Stmt::Comm(Comm::ExtendStart { .. }))).expect("a start");
    // The edge rows read the block's first and last 2 rows (one row
    // each way from a row 1 from the end).
    let Stmt::Comm(Comm::ExtendStart { out, lo: 1, hi: 1, axis: 0, edge: 2, .. }) = f.body[at] else {
        panic!("{:?}", f.body[at])
    };
    // The definition follows: one tensor written in three parts (no
    // sequential loop), the interior first, then the wait for the halo
    // rows, then the edge rows before and after the interior.
    let Stmt::Recurrence(r) = &f.body[at + 1] else { panic!("{:?}", f.body[at + 1]) };
    assert!(r.seq.is_empty() && r.window.is_none() && r.clauses.len() == 3, "{r:?}");
    let local = f.shard.as_ref().and_then(|s| s.parts.as_ref()).expect("parts").local;
    let lv = crate::base::dim::Dim::var(crate::base::dim::DimVar(local.0));
    let rows: Vec<_> = r.clauses.iter().map(|c| (c.loops[0].start.clone(), c.loops[0].end.clone())).collect();
    let (one, zero) = (crate::base::dim::Dim::constant(1), crate::base::dim::Dim::constant(0));
    let first = crate::base::dim::Dim::min(&one, &lv);
    let past = crate::base::dim::Dim::min(&crate::base::dim::Dim::max(&lv.add_const(-1), &first), &lv);
    assert_eq!(rows, vec![(first.clone(), past.clone()), (zero, first), (past, lv)], "{r:?}");
    assert!(r.clauses[0].prelude.is_empty());
    assert_eq!(r.clauses[1].prelude, vec![Stmt::Comm(Comm::HaloWait { tensor: out })]);
    assert!(r.clauses[2].prelude.is_empty());
    // The interior reads the tensor itself (its rows are in the block),
    // not the copy; the edge rows read the copy, not the tensor.
    for (k, c) in r.clauses.iter().enumerate() {
        let mut reads = Vec::new();
        crate::ir::visit::visit_var_uses(&c.body, &mut |v| reads.push(v));
        let (copy, tensor) = (reads.contains(&out), reads.contains(&f.params[0]));
        assert_eq!((copy, tensor), (k > 0, k == 0), "part {k}: {reads:?}");
    }
}

#[test]
fn an_extended_copy_read_again_later_keeps_the_whole_block() {
    // `v` starts the copy of `u`; `w`, later, reads the same copy (one
    // exchange): its interior reads the copy, so the copy holds every
    // block row, not only the edge rows `v` reads.
    let p = sharded(
        "#[shard(N)]
        fn two(u: [f64; N]) -> ([f64; N], [f64; N]) {
            let v[i] = if i >= 1 && i + 1 < N { u[i - 1] + u[i + 1] } else { u[i] };
            let w[i] = if i >= 1 && i + 1 < N { u[i - 1] - u[i + 1] } else { u[i] };
            (v, w)
        }",
    )
    .unwrap();
    let f = &p.fns[0];
    let starts: Vec<u64> = f
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Comm(Comm::ExtendStart { edge, .. }) => Some(*edge),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![u64::MAX], "{:?}", f.body);
    let alone = sharded(
        "#[shard(N)]
        fn one(u: [f64; N]) -> [f64; N] {
            let v[i] = if i >= 1 && i + 1 < N { u[i - 1] + u[i + 1] } else { u[i] };
            v
        }",
    )
    .unwrap();
    let edge = alone.fns[0].body.iter().find_map(|s| match s {
        Stmt::Comm(Comm::ExtendStart { edge, .. }) => Some(*edge),
        _ => None,
    });
    assert_eq!(edge, Some(2));
}

#[test]
fn reads_of_other_ranks_rows_are_errors_that_say_why() {
    let gather = sharded(
        "#[shard(B)]
        fn g(x: [f32; B], idx: [i64; B]) -> [f32; B] {
            let y[n] = x[idx[n]];
            y
        }",
    );
    assert!(gather.unwrap_err().contains("not the point's own index"));
    let along = sharded(
        "#[shard(B)]
        fn c(x: [f32; B]) -> [f32; B] {
            let c[0] = x[0];
            let c[n in 1..B] = c[n - 1] + x[n];
            c
        }",
    );
    assert!(along.unwrap_err().contains("runs along `B`"));
}

/// The first error's primary line and its labels' lines.
fn error_lines(src: &str) -> (usize, Vec<usize>) {
    let ast = crate::syntax::parse_str(src).unwrap();
    // With device functions (the IR is the same without a device).
    let options = crate::codegen::Options { cuda: true, ..Default::default() };
    let d = crate::driver::lower(ast, &options).err().expect("an error");
    (d[0].span.line_col().0, d[0].labels.iter().map(|l| l.span.line_col().0).collect())
}

#[test]
fn rejections_point_at_the_offending_definition_with_the_attribute_as_a_label() {
    // A reduction over the symbol inside a definition over it: at the
    // reduction (line 3), the attribute (line 1) a label.
    let (line, labels) = error_lines(
        "#[shard(B)]
        fn gram(x: [f32; B, K]) -> [f32; B] {
            let g[n] = sum[m, k](x[n, k] * x[m, k]);
            g
        }",
    );
    assert_eq!((line, labels), (3, vec![1]));
    // A gather: at the definition (line 4).
    let (line, labels) = error_lines(
        "#[shard(B)]
        fn g(x: [f32; B], idx: [i64; B]) -> [f32; B] {
            let s = 2.0;
            let y[n] = x[idx[n]] * s;
            y
        }",
    );
    assert_eq!((line, labels), (4, vec![1]));
    // A recurrence along the symbol: at the clause that steps along it.
    let (line, _) = error_lines(
        "#[shard(B)]
        fn c(x: [f32; B]) -> [f32; B] {
            let c[0] = x[0];
            let c[n in 1..B] = c[n - 1] + x[n];
            c
        }",
    );
    assert_eq!(line, 4);
    // In a function called with a sharded tensor: at the callee's
    // definition (line 2), with labels at the call (line 7) and the
    // attribute (line 5).
    let (line, labels) = error_lines(
        "fn p(x: [f32; N], idx: [i64; N]) -> [f32; N] {
            let y[n] = x[idx[n]];
            y
        }
        #[shard(B)]
        fn s(x: [f32; B], idx: [i64; B]) -> [f32; B] {
            let y = p(x, idx);
            y
        }",
    );
    assert_eq!((line, labels), (2, vec![7, 5]));
    // A reduction over the symbol in a device recurrence's step: at the
    // reduction (line 5).
    let (line, labels) = error_lines(
        "#[shard(B)]
        #[device(cuda)]
        fn train(x: [f32; B, I], w0: [f32; I], steps: i64) -> [f32; I] {
            let w[0, i] = w0[i];
            let w[s in 1..steps, i] = w[s - 1, i] - 0.1 * sum[n](x[n, i] * w[s - 1, i]);
            let last[i] = w[steps - 1, i];
            last
        }",
    );
    assert_eq!((line, labels), (5, vec![1]));
}
