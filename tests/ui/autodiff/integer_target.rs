use einlang::einlang;

einlang! {
    pub fn f(x: [f32; N]) -> [f32; N] {
        let count = sum[i](if x[i] > 0.0 { 1 } else { 0 });
        @count / @x
    }
}

fn main() {}
