use einlang::einlang;

einlang! {
    pub fn sign_name(positive: bool) -> i32 {
        match positive {
            true => 1,
        }
    }
}

fn main() {}
