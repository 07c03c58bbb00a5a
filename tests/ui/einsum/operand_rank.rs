use einlang::einlang;

einlang! {
    use std::ml::einsum;

    pub fn batched(a: [f32; B, M, K], b: [f32; K, N]) -> [f32; B, M, N] {
        einsum("bij,jk->bik", b, a)
    }
}

fn main() {}
