//! `argmax`/`argmin` over the sharded axis against the unsharded twins, on
//! every rank of the world this binary runs in (`.ci/run`: `mpirun -np 1,
//! 2, 3`): ties (the first index wins, across ranks too), NaN terms (the
//! unsharded reduction keeps its first term, so a NaN wins only when it is
//! the very first term, and a later NaN never does: a NaN first in a
//! rank's block other than the first must not win), blocks that are all
//! NaN, empty blocks, a partial range over the axis, integers, per-column
//! results. Exact: the same index as the twin, the same on every rank. A
//! failed check exits non-zero.

use einlang::dist::{block, World};
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};
use std::ops::Range;

einlang! {
    #[shard(N)]
    pub fn picks(v: [f64; N], x: [f32; N, K], c: [i64; N]) -> (i64, i64, [i64; K], [i64; K], i64, i64, i64) {
        let a = argmax[n](v[n]);
        let b = argmin[n](v[n] * 2.0);
        let p[k] = argmax[n](x[n, k]);
        let q[k] = argmin[n](x[n, k]);
        let r = argmax[n in 1..N](v[n]);
        let ci = argmax[n](c[n]);
        let cj = argmin[n](c[n]);
        (a, b, p, q, r, ci, cj)
    }
    pub fn picks_whole(v: [f64; N], x: [f32; N, K], c: [i64; N]) -> (i64, i64, [i64; K], [i64; K], i64, i64, i64) {
        let a = argmax[n](v[n]);
        let b = argmin[n](v[n] * 2.0);
        let p[k] = argmax[n](x[n, k]);
        let q[k] = argmin[n](x[n, k]);
        let r = argmax[n in 1..N](v[n]);
        let ci = argmax[n](c[n]);
        let cj = argmin[n](c[n]);
        (a, b, p, q, r, ci, cj)
    }
}

fn case(world: &World, what: &str, v: &Array1<f64>, rows: Range<usize>) {
    let n = v.len();
    let x = Array2::from_shape_fn((n, 3), |(i, k)| match k {
        0 => v[i] as f32,
        1 => -(v[i] as f32),
        _ => ((i * 5) % 3) as f32,
    });
    let c = Array1::from_shape_fn(n, |i| ((i * 7) % 4) as i64 - i64::from(v[i].is_nan()) * 9);
    let got = picks(world, v.slice(s![rows.clone()]), x.slice(s![rows.clone(), ..]), c.slice(s![rows.clone()]))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = picks_whole(v, &x, &c).unwrap();
    let got = (got.0, got.1, got.2.to_vec(), got.3.to_vec(), got.4, got.5, got.6);
    let want = (want.0, want.1, want.2.to_vec(), want.3.to_vec(), want.4, want.5, want.6);
    assert_eq!(got, want, "{what}, rank {}", world.rank());
    let mut mine = vec![got.0, got.1, got.4, got.5, got.6];
    mine.extend(got.2.iter().chain(&got.3));
    let all = world.all_gather_i64(&mine);
    for chunk in all.chunks(mine.len().max(1)) {
        assert_eq!(chunk, &mine[..], "{what}: ranks differ");
    }
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    let nan = f64::NAN;
    // The unsharded reduction's NaN rule, checked on the twin itself.
    let t = picks_whole(&Array1::from(vec![nan, 3.0, 1.0]), &Array2::zeros((3, 3)), &Array1::zeros(3)).unwrap();
    assert_eq!((t.0, t.1, t.4), (0, 0, 1), "the first term wins when it is NaN");
    let t = picks_whole(&Array1::from(vec![1.0, nan, 3.0]), &Array2::zeros((3, 3)), &Array1::zeros(3)).unwrap();
    assert_eq!((t.0, t.1), (2, 0), "a later NaN never wins");
    let vectors: Vec<(&str, Vec<f64>)> = vec![
        ("ties", vec![1.0, 5.0, 2.0, 5.0, -3.0, 5.0, -3.0, 0.0, -3.0]),
        ("NaN first", vec![nan, 1.0, 7.0, 2.0, 7.0, -1.0, 0.5]),
        ("NaN inside", vec![2.0, 4.0, nan, 9.0, nan, 1.0, nan, 9.0, -4.0, nan]),
        (
            "NaN at block starts",
            (0..12).map(|i| if i % 2 == 0 && i > 0 { nan } else { (i as f64 * 0.7).sin() }).collect(),
        ),
        ("all NaN but one", vec![nan, nan, nan, nan, 3.0, nan, nan]),
        ("all NaN", vec![nan; 5]),
        ("one", vec![2.5]),
        ("none", vec![]),
        ("infinities", vec![f64::NEG_INFINITY, nan, f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY]),
    ];
    for (what, v) in &vectors {
        let v = Array1::from(v.clone());
        let n = v.len();
        case(&world, &format!("{what}, balanced"), &v, block(n, rank, size));
        // Uneven: the first rank empty, the others growing.
        let lens: Vec<usize> = (0..size).map(|r| if r == 0 && size > 1 { 0 } else { r + 1 }).collect();
        let total: usize = lens.iter().sum();
        let start: usize = lens[..rank].iter().sum();
        // Lengthened or cut to the blocks' total.
        let w = Array1::from_shape_fn(total, |i| v.get(i % n.max(1)).copied().unwrap_or(1.0));
        case(&world, &format!("{what}, uneven"), &w, start..start + lens[rank]);
        // A NaN that starts the third rank's block (not the first term).
        if size > 1 && total > lens[0] + lens[1] {
            let mut w = w.clone();
            w[lens[0] + lens[1]] = nan;
            case(&world, &format!("{what}, NaN starting a later block"), &w, start..start + lens[rank]);
        }
    }
    println!("rank {rank} of {size}: argmax/argmin over the sharded axis agree with the unsharded twins");
}
