// A reduction over the sharded symbol inside a step of a device
// function's recurrence: device recurrences run their steps as kernels
// without communication between them. The error points at the reduction.
use einlang::einlang;

einlang! {
    #[shard(B)]
    #[device(cuda)]
    pub fn train(x: [f32; B, I], w0: [f32; I], steps: i64) -> [f32; I] {
        let w[0, i] = w0[i];
        let w[s in 1..steps, i] = w[s - 1, i] - 0.1 * sum[n](x[n, i] * w[s - 1, i]);
        let last[i] = w[steps - 1, i];
        last
    }
}

fn main() {}
