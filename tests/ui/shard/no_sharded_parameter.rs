// The symbol names no parameter axis.
use einlang::einlang;

einlang! {
    #[shard(B)]
    pub fn scale(x: [f32; N], s: f32) -> [f32; N] {
        let y[n] = x[n] * s;
        y
    }
}

fn main() {}
