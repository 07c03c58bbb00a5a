use einlang::einlang;

einlang! {
    use std::ml::einsum;

    pub fn contract(a: [f32; M, K], b: [f32; K, N], c: [f32; N]) -> [f32; M, N] {
        einsum("ij,jk->ik", (a, b, c))
    }
}

fn main() {}
