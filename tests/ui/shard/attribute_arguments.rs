// `#[shard]` takes one dimension symbol.
use einlang::einlang;

einlang! {
    #[shard(B, N)]
    pub fn scale(x: [f32; B, N], s: f32) -> [f32; B, N] {
        let y[b, n] = x[b, n] * s;
        y
    }
}

fn main() {}
