// A recurrence along the sharded axis: every step needs the step before,
// from another rank.
use einlang::einlang;

einlang! {
    #[shard(B)]
    pub fn cumsum(x: [f32; B]) -> [f32; B] {
        let c[0] = x[0];
        let c[n in 1..B] = c[n - 1] + x[n];
        c
    }
}

fn main() {}
