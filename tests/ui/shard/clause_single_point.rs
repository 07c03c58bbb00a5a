// A recurrence clause that writes one position along the sharded axis (a
// boundary row): that row belongs to one rank.
use einlang::einlang;

einlang! {
    #[shard(N)]
    pub fn diffuse(u0: [f32; N], steps: i64) -> [f32; N] {
        let u[0, i] = u0[i];
        let u[t in 1..steps, 0] = 0.0;
        let u[t in 1..steps, i in 1..N] = 0.5 * (u[t - 1, i] + u[t - 1, i - 1]);
        let last[i] = u[steps - 1, i];
        last
    }
}

fn main() {}
