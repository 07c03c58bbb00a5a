use einlang::einlang;

einlang! {
    // `k` reads axis 1 of both: `K` and `N` are distinct sizes.
    pub fn matmul_bt(a: [f32; M, K], b: [f32; N, K2]) -> [f32; M, N] {
        let c[i, j] = sum[k](a[i, k] * b[j, k]);
        c
    }
}

fn main() {}
