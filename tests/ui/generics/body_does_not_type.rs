use einlang::einlang;

einlang! {
    fn half(x) { x / 2.0 }

    pub fn halve_count(n: i32) -> i32 {
        half(n)
    }
}

fn main() {}
