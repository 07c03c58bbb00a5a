// A reduction with two indices over the sharded symbol.
use einlang::einlang;

einlang! {
    #[shard(B)]
    pub fn pairs(x: [f32; B]) -> f32 {
        let s = sum[n, m](x[n] * x[m]);
        s
    }
}

fn main() {}
