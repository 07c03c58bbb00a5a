//! `std::ml::{reshape, squeeze, unsqueeze}`: shape operations whose extents
//! or axes come at run time, giving dynamic-rank results that a declared
//! result type (or `as`) checks. References are written by hand from the
//! row-major order of the elements.

use einlang::einlang;
use einlang::ndarray::{array, Array, ArrayD, IxDyn};
use einlang::Error;

einlang! {
    use std::ml::{reshape, squeeze, unsqueeze, slice};

    /// A result of declared shape: rank and extents are checked.
    pub fn to_matrix(x: [f32; N], rows: i64) -> [f32; 2, ?] {
        reshape(x, [rows, -1])
    }

    pub fn any_shape(x: [i32; A, B], shape: [i64; K]) -> [i32; *] {
        reshape(x, shape)
    }

    pub fn drop_axes(x: [f64; A, B, C], axes: [i32; K]) -> [f64; *] {
        squeeze(x, axes)
    }

    pub fn add_axes(x: [f64; A, B], axes: [i64; K]) -> [f64; *] {
        unsqueeze(x, axes)
    }

    /// The seed's `std::ml::shape_ops::shape`: the extents as an `i64`
    /// vector, usable as a reshape target.
    pub fn extents(x: [f32; A, B, C]) -> [i64; 3] {
        std::ml::shape_ops::shape(x)
    }

    pub fn like(x: [i32; N], y: [f32; A, B]) -> [i32; *] {
        use std::ml::shape_ops::shape;
        reshape(x, shape(y))
    }

    /// ONNX Slice, through the seed's path.
    pub fn sliced(x: [i32; A, B, C], starts: [i64; K], ends: [i64; K], axes: [i32; K], steps: [i64; K]) -> [i32; *] {
        std::ml::utility_ops::slice(x, starts, ends, axes, steps)
    }

    /// A slice converted to its known rank and summed.
    pub fn window_sum(v: [f64; N], from: i64, to: i64) -> f64 {
        let w = slice(v, [from], [to], [0], [1]) as [f64; ?];
        sum[i](w[i])
    }

    /// ONNX GatherND: rows of the last index axis name points or
    /// sub-tensors.
    pub fn gathered(x: [f32; A, B, C], indices: [i32; P, Q, K]) -> [f32; *] {
        std::ml::indexing_ops::gather_nd(x, indices)
    }

    pub fn gathered_points(x: [f32; A, B, C], indices: [i64; P, 3]) -> [f32; P] {
        std::ml::gather_nd(x, indices)
    }

    /// Converted explicitly, then used with indices.
    pub fn trace_of(x: [f32; N]) -> f32 {
        let m = reshape(x, [2, 2]) as [f32; 2, 2];
        m[0, 0] + m[1, 1]
    }
}

#[test]
fn reshape_keeps_row_major_order() {
    let x = array![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    assert_eq!(to_matrix(&x, 2).unwrap(), array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    // Three rows is the wrong shape for `[f32; 2, ?]`: an error, not a panic.
    assert!(matches!(to_matrix(&x, 3), Err(Error::Extent { .. }) | Err(Error::Shape { .. })), "{:?}", to_matrix(&x, 3));
    assert!(matches!(to_matrix(&x, 4), Err(Error::Extent { .. })));

    let m = array![[1, 2, 3], [4, 5, 6]];
    let r = any_shape(&m, &array![3, 1, 2]).unwrap();
    assert_eq!(r, ArrayD::from_shape_vec(IxDyn(&[3, 1, 2]), vec![1, 2, 3, 4, 5, 6]).unwrap());
    // A transposed view is read in its logical order.
    let r = any_shape(&m.t(), &array![6]).unwrap();
    assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![1, 4, 2, 5, 3, 6]);
    assert_eq!(trace_of(&array![1.0f32, 2.0, 3.0, 4.0]).unwrap(), 5.0);
}

#[test]
fn squeeze_and_unsqueeze_by_axes() {
    let x = Array::from_shape_fn((1, 3, 1), |(_, j, _)| j as f64);
    assert_eq!(drop_axes(&x, &array![]).unwrap().shape(), &[3]);
    assert_eq!(drop_axes(&x, &array![-1]).unwrap().shape(), &[1, 3]);
    assert!(matches!(drop_axes(&x, &array![1]), Err(Error::Extent { .. })));
    let m = array![[1.0, 2.0], [3.0, 4.0]];
    let u = add_axes(&m, &array![0, 3]).unwrap();
    assert_eq!(u.shape(), &[1, 2, 2, 1]);
    assert_eq!(u.iter().copied().collect::<Vec<_>>(), vec![1.0, 2.0, 3.0, 4.0]);
    assert!(matches!(add_axes(&m, &array![7]), Err(Error::Extent { .. })));
}

#[test]
fn shape_gives_the_extents() {
    let x = Array::from_shape_fn((2, 3, 4), |(a, b, c)| (a + b + c) as f32);
    assert_eq!(extents(&x).unwrap(), array![2i64, 3, 4]);
    let y = array![[0.0f32, 0.0, 0.0], [0.0, 0.0, 0.0]];
    let got = like(&array![1, 2, 3, 4, 5, 6], &y).unwrap();
    assert_eq!(got, array![[1, 2, 3], [4, 5, 6]].into_dyn());
    assert!(like(&array![1, 2, 3], &y).is_err());
}

/// The ONNX reference walk for one axis of length `d`.
fn walk(d: i64, start: i64, end: i64, step: i64) -> Vec<usize> {
    let fix = |v: i64| if v < 0 { v + d } else { v };
    let (s, e) = if step > 0 {
        (fix(start).clamp(0, d), fix(end).clamp(0, d))
    } else {
        (fix(start).max(0).min(d - 1), fix(end).max(-1).min(d - 1))
    };
    let mut out = Vec::new();
    let mut i = s;
    while (step > 0 && i < e) || (step < 0 && i > e) {
        out.push(i as usize);
        i += step;
    }
    out
}

#[test]
fn slice_follows_onnx() {
    let x = Array::from_shape_fn((4, 5, 3), |(a, b, c)| (a * 100 + b * 10 + c) as i32);
    // (starts, ends, axes, steps), each case by hand-picked ONNX features:
    // negative axis, negative start, a huge end, negative steps, an
    // unlisted axis, and an empty result.
    let cases: Vec<(Vec<i64>, Vec<i64>, Vec<i32>, Vec<i64>)> = vec![
        (vec![1], vec![3], vec![0], vec![1]),
        (vec![0, 1], vec![i64::MAX, -1], vec![-1, 1], vec![2, 1]),
        (vec![-1, 4], vec![-10, 0], vec![0, 1], vec![-1, -2]),
        (vec![3], vec![1], vec![2], vec![1]),
    ];
    for (st, en, ax, sp) in cases {
        let got = sliced(
            &x,
            &Array::from(st.clone()),
            &Array::from(en.clone()),
            &Array::from(ax.clone()),
            &Array::from(sp.clone()),
        )
        .unwrap();
        let mut keep: Vec<Vec<usize>> = (0..3).map(|a| (0..x.shape()[a]).collect()).collect();
        for j in 0..ax.len() {
            let a = if ax[j] < 0 { (ax[j] + 3) as usize } else { ax[j] as usize };
            keep[a] = walk(x.shape()[a] as i64, st[j], en[j], sp[j]);
        }
        let want = ArrayD::from_shape_fn(IxDyn(&[keep[0].len(), keep[1].len(), keep[2].len()]), |ix| {
            x[[keep[0][ix[0]], keep[1][ix[1]], keep[2][ix[2]]]]
        });
        assert_eq!(got, want, "starts {st:?} ends {en:?} axes {ax:?} steps {sp:?}");
    }
    let v = array![1.0f64, 2.0, 4.0, 8.0, 16.0];
    assert_eq!(window_sum(&v, 1, 4).unwrap(), 14.0);
    assert_eq!(window_sum(&v, -2, 100).unwrap(), 24.0);
    // A zero step, an axis listed twice, an axis out of range.
    let one = |v: i64| Array::from(vec![v]);
    assert!(matches!(sliced(&x, &one(0), &one(2), &Array::from(vec![0]), &one(0)), Err(Error::Extent { .. })));
    let two = |a: i64, b: i64| Array::from(vec![a, b]);
    assert!(sliced(&x, &two(0, 0), &two(1, 1), &Array::from(vec![1, -2]), &two(1, 1)).is_err());
    assert!(sliced(&x, &one(0), &one(1), &Array::from(vec![3]), &one(1)).is_err());
    // Vectors of different lengths (here the wrapper's shared `K` already
    // rejects them).
    assert!(sliced(&x, &two(0, 0), &one(1), &Array::from(vec![0]), &one(1)).is_err());
}

#[test]
fn gather_nd_follows_onnx() {
    let x = Array::from_shape_fn((3, 4, 2), |(a, b, c)| (a * 100 + b * 10 + c) as f32);
    // Rows of length 1 (sub-matrices), 2 (vectors) and 3 (points); -1 is
    // the last entry of its axis.
    for k in 1..=3usize {
        let idx = Array::from_shape_fn((2, 2, k), |(p, q, a)| {
            let v = ((p * 2 + q) * 5 + a * 3) % x.shape()[a];
            if (p + q + a) % 3 == 0 {
                v as i32 - x.shape()[a] as i32
            } else {
                v as i32
            }
        });
        let got = gathered(&x, &idx).unwrap();
        let mut dims = vec![2, 2];
        dims.extend_from_slice(&x.shape()[k..]);
        let want = ArrayD::from_shape_fn(IxDyn(&dims), |ix| {
            let mut point = [0usize; 3];
            for a in 0..3 {
                point[a] = if a < k {
                    let v = idx[[ix[0], ix[1], a]];
                    (if v < 0 { v + x.shape()[a] as i32 } else { v }) as usize
                } else {
                    ix[2 + a - k]
                };
            }
            x[point]
        });
        assert_eq!(got, want, "rows of length {k}");
    }
    let pts = array![[2i64, 3, 1], [0, 0, 0], [1, -1, -2]];
    assert_eq!(gathered_points(&x, &pts).unwrap(), array![231.0f32, 0.0, 130.0]);
    // An entry out of range, and rows longer than the rank.
    assert!(matches!(gathered_points(&x, &array![[3i64, 0, 0]]), Err(Error::Index { axis: 0, index: 3, .. })));
    assert!(gathered(&x, &Array::from_elem((1, 1, 4), 0)).is_err());
}
