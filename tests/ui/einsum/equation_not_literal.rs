use einlang::einlang;

einlang! {
    use std::ml::einsum;

    pub fn contract(eq: str, a: [f32; M, K], b: [f32; K, N]) -> [f32; M, N] {
        einsum(eq, a, b)
    }
}

fn main() {}
