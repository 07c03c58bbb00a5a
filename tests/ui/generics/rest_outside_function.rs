use einlang::einlang;

einlang! {
    // Top-level statements have no parameters to give a rest index its rank.
    let x = [[1.0, 2.0], [3.0, 4.0]];
    let y[..b] = x[..b] * 2.0;
}

fn main() {}
