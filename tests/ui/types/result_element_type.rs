use einlang::einlang;

einlang! {
    // `argmax` gives the index as `i64`.
    pub fn predict(logits: [f32; K]) -> i32 {
        argmax[k](logits[k])
    }
}

fn main() {}
