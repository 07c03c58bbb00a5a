use einlang::einlang;

einlang! {
    // A typed function has one rank per parameter: its axes are named.
    pub fn total(x: [f32; N, M]) -> f32 {
        sum[..r](x[..r])
    }
}

fn main() {}
