use einlang::einlang;

einlang! {
    pub fn contract(a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        std::ml::einsum("ij,jk->il", a, b)
    }
}

fn main() {}
