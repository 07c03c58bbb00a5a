//! Sharded functions from ordinary `#[test]`s: under an MPI launcher the
//! runtime makes the test harness run one test at a time (in name order,
//! the same on every rank), so the tests' collectives line up across
//! ranks. `.ci/run` runs this binary under `mpirun -np 2` and `-np 3`; as
//! a world of one the tests run as usual.

use einlang::dist::World;
use einlang::einlang;
use einlang::ndarray::{s, Array1, Array2};

einlang! {
    #[shard(B)]
    pub fn col_sums(x: [i64; B, K]) -> [i64; K] {
        let c[k] = sum[n](x[n, k] * (n + 1));
        c
    }

    #[shard(B)]
    pub fn biggest(x: [f64; B]) -> (f64, i64) {
        (max[n](x[n]), argmax[n](x[n]))
    }
}

#[test]
fn column_sums_weigh_rows_by_their_global_index() {
    let world = World::init().unwrap();
    if world.size() > 1 {
        assert_eq!(std::env::var("RUST_TEST_THREADS").as_deref(), Ok("1"), "one test at a time under MPI");
    }
    let x = Array2::from_shape_fn((11, 3), |(i, k)| (i * 3 + k) as i64);
    let rows = world.block(11);
    let got = col_sums(&world, x.slice(s![rows, ..])).unwrap();
    for k in 0..3 {
        let want: i64 = (0..11).map(|i| ((i * 3 + k) * (i + 1)) as i64).sum();
        assert_eq!(got[k], want);
    }
}

#[test]
fn the_first_maximum_wins_across_ranks() {
    let world = World::init().unwrap();
    let x = Array1::from_shape_fn(9, |i| if i == 2 || i == 7 { 5.0 } else { i as f64 * 0.1 });
    let rows = world.block(9);
    let (m, at) = biggest(&world, x.slice(s![rows])).unwrap();
    assert_eq!((m, at), (5.0, 2));
}
