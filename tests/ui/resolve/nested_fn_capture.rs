use einlang::einlang;

einlang! {
    // A nested function sees no locals of the body around it.
    pub fn outer(x: i64) -> i64 {
        let local = 300;
        fn inner(v: i64) -> i64 { v + local }
        inner(x)
    }
}

fn main() {}
