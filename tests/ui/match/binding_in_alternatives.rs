use einlang::einlang;

einlang! {
    pub fn pick(p: (i32, i32)) -> i32 {
        match p {
            (x, 0) | (0, x) => x,
            _ => -1,
        }
    }
}

fn main() {}
