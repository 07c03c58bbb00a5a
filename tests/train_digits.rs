//! The digits example's training step (`examples/ein/train_digits.ein`):
//! its gradients against a backward pass written by hand in Rust, and a
//! few epochs of training that must lower the loss and beat chance by far.

#[path = "../examples/common/digits.rs"]
mod digits;

use digits::{mlp, Params, Rng};
use einlang::ndarray::{s, Array1, Array2, Axis};

/// The gradients of the mean cross-entropy with respect to `w1, b1, w2, b2`,
/// by the chain rule written out (softmax minus one-hot, back through the
/// tanh), in f64.
fn backward(p: &Params, x: &Array2<f32>, y: &Array1<i64>) -> (Array2<f64>, Array1<f64>, Array2<f64>, Array1<f64>) {
    let f = |a: &Array2<f32>| a.mapv(f64::from);
    let (x, w1, w2) = (f(x), f(&p.w1), f(&p.w2));
    let (b1, b2) = (p.b1.mapv(f64::from), p.b2.mapv(f64::from));
    let batch = x.nrows() as f64;
    let h = (x.dot(&w1) + &b1).mapv(f64::tanh);
    let z = h.dot(&w2) + &b2;
    let mut dz = z.clone();
    for (n, mut row) in dz.axis_iter_mut(Axis(0)).enumerate() {
        let m = row.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        row.mapv_inplace(|v| (v - m).exp());
        let total = row.sum();
        row.mapv_inplace(|v| v / total);
        row[y[n] as usize] -= 1.0;
        row.mapv_inplace(|v| v / batch);
    }
    let gw2 = h.t().dot(&dz);
    let gb2 = dz.sum_axis(Axis(0));
    let da = dz.dot(&w2.t()) * h.mapv(|v| 1.0 - v * v);
    let gw1 = x.t().dot(&da);
    let gb1 = da.sum_axis(Axis(0));
    (gw1, gb1, gw2, gb2)
}

/// Largest difference relative to the largest magnitude of `want`.
fn rel_err<D: einlang::ndarray::Dimension>(
    got: &einlang::ndarray::Array<f64, D>,
    want: &einlang::ndarray::Array<f64, D>,
) -> f64 {
    let scale = want.fold(0.0f64, |m, v| m.max(v.abs()));
    let worst = got.iter().zip(want.iter()).fold(0.0f64, |m, (g, w)| m.max((g - w).abs()));
    worst / scale
}

#[test]
fn gradients_match_a_hand_written_backward_pass() {
    let (train, _) = digits::load().unwrap();
    let mut rng = Rng::new(7);
    let p = Params::init(16, &mut rng);
    let (x, y) = (train.x.slice(s![..40, ..]).to_owned(), train.y.slice(s![..40]).to_owned());
    // With learning rate 1 the step subtracts the gradient itself.
    let (w1, b1, w2, b2, loss) = mlp::sgd_step(&x, &y, &p.w1, &p.b1, &p.w2, &p.b2, 1.0).unwrap();
    let grad2 = |old: &Array2<f32>, new: &Array2<f32>| (old - new).mapv(f64::from);
    let grad1 = |old: &Array1<f32>, new: &Array1<f32>| (old - new).mapv(f64::from);
    let (gw1, gb1, gw2, gb2) = backward(&p, &x, &y);
    for (name, err) in [
        ("w1", rel_err(&grad2(&p.w1, &w1), &gw1)),
        ("b1", rel_err(&grad1(&p.b1, &b1), &gb1)),
        ("w2", rel_err(&grad2(&p.w2, &w2), &gw2)),
        ("b2", rel_err(&grad1(&p.b2, &b2), &gb2)),
    ] {
        assert!(err < 1e-3, "gradient of {name} differs from the hand-written one by {err} (relative)");
    }
    let want = mlp::batch_loss(&x, &y, &p.w1, &p.b1, &p.w2, &p.b2).unwrap();
    assert_eq!(loss, want, "sgd_step returns the loss before its update");
}

#[test]
fn a_few_epochs_lower_the_loss_and_beat_chance() {
    let (train, test) = digits::load().unwrap();
    let mut rng = Rng::new(2024);
    let mut params = Params::init(32, &mut rng);
    let initial = params.loss(&train).unwrap();
    let mut losses = Vec::new();
    for _ in 0..4 {
        losses.push(digits::epoch(&mut params, &train, 50, 0.3, &mut rng).unwrap());
    }
    let last = params.loss(&train).unwrap();
    assert!(
        losses.windows(2).all(|w| w[1] < w[0]) && last < 0.5 * initial,
        "training loss should fall epoch after epoch: initial {initial}, epochs {losses:?}, after {last}"
    );
    // Chance is 10%.
    let accuracy = params.accuracy(&test).unwrap();
    assert!(accuracy > 0.75, "test accuracy after 4 epochs is {accuracy}");
}
