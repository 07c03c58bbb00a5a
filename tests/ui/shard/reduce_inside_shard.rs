// A reduction over the sharded axis inside a definition over it: each
// point needs every rank's rows.
use einlang::einlang;

einlang! {
    #[shard(B)]
    pub fn gram(x: [f32; B, K]) -> [f32; B] {
        let g[n] = sum[m, k](x[n, k] * x[m, k]);
        g
    }
}

fn main() {}
