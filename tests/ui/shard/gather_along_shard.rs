// A gather along the sharded axis at data-dependent indices: the element
// may be on another rank.
use einlang::einlang;

einlang! {
    #[shard(B)]
    pub fn permute(x: [f32; B], idx: [i64; B]) -> [f32; B] {
        let y[n] = x[idx[n]];
        y
    }
}

fn main() {}
