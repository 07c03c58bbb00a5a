// A definition with two axes over the sharded symbol: a rank holds a block
// of one of them only.
use einlang::einlang;

einlang! {
    #[shard(B)]
    pub fn outer(x: [f32; B]) -> f32 {
        let y[n, m] = x[n] * x[m];
        sum[n, m](y[n, m])
    }
}

fn main() {}
