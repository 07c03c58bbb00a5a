//! Data-parallel training steps (`examples/ein/train_digits_dist.ein`, the
//! digits MLP with the batch sharded) against the unsharded step on the
//! whole batch, on every rank of the world this binary runs in (a world of
//! one under `cargo test`; `.ci/run` runs it under `mpirun -np 1, 2, 3`).
//! The weights after a step agree with the unsharded step within 1e-5
//! relative (the sums over the batch add their terms in another order),
//! are the same bits on every rank after every step, and the gradient is
//! checked against central finite differences of the unsharded loss. A
//! step sends the all-reduced values (gradients and loss) and a few words
//! of agreement: counted exactly.

#[path = "../examples/common/digits.rs"]
mod digits;

mod dist {
    einlang::include_ein!("examples/ein/train_digits_dist.ein");
}

use digits::{mlp, Params, Rng};
use einlang::dist::{block, World};
use einlang::ndarray::{s, Array1, Array2, Axis};

fn bits(p: &Params) -> Vec<i64> {
    p.w1.iter().chain(p.b1.iter()).chain(p.w2.iter()).chain(p.b2.iter()).map(|v| v.to_bits() as i64).collect()
}

fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0.0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

fn flat(p: &Params) -> Vec<f32> {
    p.w1.iter().chain(p.b1.iter()).chain(p.w2.iter()).chain(p.b2.iter()).copied().collect()
}

fn main() {
    let world = World::init().expect("a world");
    let (rank, size) = (world.rank(), world.size());
    let (train, test) = digits::load().expect("the digits data");
    let mut rng = Rng::new(11);
    let hidden = 16;
    let mut sharded = Params::init(hidden, &mut rng);
    let mut whole =
        Params { w1: sharded.w1.clone(), b1: sharded.b1.clone(), w2: sharded.w2.clone(), b2: sharded.b2.clone() };

    // Steps on batches of several sizes, uneven over the ranks (and with
    // empty blocks when the batch is smaller than the world).
    let mut at = 0;
    for batch in [50usize, 37, 2, 1, 64] {
        let rows: Vec<usize> = (at..at + batch).map(|i| i % train.y.len()).collect();
        at += batch;
        let x = train.x.select(Axis(0), &rows);
        let y = train.y.select(Axis(0), &rows);
        let mine = block(batch, rank, size);
        let p = &sharded;
        let before = world.bytes_sent();
        let (w1, b1, w2, b2, loss) = dist::sgd_step(
            &world,
            x.slice(s![mine.clone(), ..]),
            y.slice(s![mine.clone()]),
            &p.w1,
            &p.b1,
            &p.w2,
            &p.b2,
            0.3,
        )
        .expect("a sharded step");
        let sent = world.bytes_sent() - before;
        sharded = Params { w1, b1, w2, b2 };
        let q = &whole;
        let (w1, b1, w2, b2, loss1) = mlp::sgd_step(&x, &y, &q.w1, &q.b1, &q.w2, &q.b2, 0.3).unwrap();
        whole = Params { w1, b1, w2, b2 };
        assert!((loss - loss1).abs() <= 1e-5 * loss1.abs().max(1.0), "loss {loss} vs {loss1}");
        let err = max_rel(&flat(&sharded), &flat(&whole));
        assert!(err < 1e-5, "batch {batch}: weights differ from the unsharded step by {err}");
        // The same weights, bit for bit, on every rank.
        let mine_bits = bits(&sharded);
        let all = world.all_gather_i64(&mine_bits);
        for (r, theirs) in all.chunks(mine_bits.len()).enumerate() {
            assert_eq!(theirs, &mine_bits[..], "rank {r} has other weights than rank {rank}");
        }
        // Bytes: the gradients (I*H + H + H*C + C floats) and the loss,
        // plus one status word before each of the 2 messages (the loss; the four gradients together), at entry
        // and at the end, and the entry's 4 extents (B, I, H, C) and its scalar parameter (the learning rate).
        let (i, c) = (digits::INPUTS, digits::CLASSES);
        let values = ((i * hidden + hidden + hidden * c + c + 1) * 4) as u64;
        let agreement = (2 + 2) * 8 + 4 * 8 + 8;
        let expected = if size == 1 { 0 } else { values + agreement };
        assert_eq!(sent, expected, "rank {rank}, batch {batch}: bytes sent");
        // Far less than the batch itself would be.
        assert!(size == 1 || sent < (batch * i * 4) as u64 + values + agreement as u64);
    }

    // The gradient itself against central differences of the unsharded
    // loss, for a few weights (in f64 from f32 losses: a loose tolerance).
    let batch = 40;
    let x: Array2<f32> = train.x.slice(s![..batch, ..]).to_owned();
    let y: Array1<i64> = train.y.slice(s![..batch]).to_owned();
    let mine = block(batch, rank, size);
    let p = &sharded;
    let (w1, _, _, b2, _) = dist::sgd_step(
        &world,
        x.slice(s![mine.clone(), ..]),
        y.slice(s![mine.clone()]),
        &p.w1,
        &p.b1,
        &p.w2,
        &p.b2,
        1.0,
    )
    .unwrap();
    let loss_at = |w1: &Array2<f32>, b2: &Array1<f32>| -> f64 {
        f64::from(mlp::batch_loss(&x, &y, w1, &p.b1, &p.w2, b2).unwrap())
    };
    for &(r, col) in &[(3usize, 2usize), (20, 7), (40, 11)] {
        let h = 1e-2f32;
        let (mut up, mut down) = (p.w1.clone(), p.w1.clone());
        up[[r, col]] += h;
        down[[r, col]] -= h;
        let fd = (loss_at(&up, &p.b2) - loss_at(&down, &p.b2)) / (2.0 * f64::from(h));
        let g = f64::from(p.w1[[r, col]] - w1[[r, col]]);
        assert!((g - fd).abs() <= 2e-3 + 2e-2 * fd.abs(), "d loss / d w1[{r}, {col}]: {g} vs {fd}");
    }
    for k in [0usize, 5, 9] {
        let h = 1e-2f32;
        let (mut up, mut down) = (p.b2.clone(), p.b2.clone());
        up[k] += h;
        down[k] -= h;
        let fd = (loss_at(&p.w1, &up) - loss_at(&p.w1, &down)) / (2.0 * f64::from(h));
        let g = f64::from(p.b2[k] - b2[k]);
        assert!((g - fd).abs() <= 2e-3 + 2e-2 * fd.abs(), "d loss / d b2[{k}]: {g} vs {fd}");
    }

    // The sharded accuracy over the test set equals the unsharded one.
    let n = test.y.len();
    let mine = block(n, rank, size);
    let p = &sharded;
    let acc = dist::accuracy(
        &world,
        test.x.slice(s![mine.clone(), ..]),
        test.y.slice(s![mine.clone()]),
        &p.w1,
        &p.b1,
        &p.w2,
        &p.b2,
    )
    .unwrap();
    let acc1 = mlp::accuracy(&test.x, &test.y, &p.w1, &p.b1, &p.w2, &p.b2).unwrap();
    assert!((acc - acc1).abs() <= 1e-6, "accuracy {acc} vs {acc1}");
    println!(
        "rank {rank} of {size}: data-parallel steps agree with the unsharded ones ({} bytes sent)",
        world.bytes_sent()
    );
}
