// A gather along the sharded axis inside a function the sharded one calls
// with a sharded tensor: the callee is compiled in the sharded context,
// and the error points at the callee's definition and at the call.
use einlang::einlang;

einlang! {
    fn permute(x: [f32; N], idx: [i64; N]) -> [f32; N] {
        let y[n] = x[idx[n]];
        y
    }

    #[shard(B)]
    pub fn shuffle(x: [f32; B], idx: [i64; B]) -> [f32; B] {
        let y = permute(x, idx);
        y
    }
}

fn main() {}
