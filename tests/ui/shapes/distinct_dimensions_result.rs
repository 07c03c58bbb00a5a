use einlang::einlang;

einlang! {
    // The transpose has shape [N, M], not the declared [M, N].
    pub fn transpose(x: [f32; M, N]) -> [f32; M, N] {
        let t[j, i] = x[i, j];
        t
    }
}

fn main() {}
