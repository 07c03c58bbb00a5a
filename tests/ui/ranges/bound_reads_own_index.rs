use einlang::einlang;

einlang! {
    // `len(j[i])` needs `i`, which the same reduction runs over.
    pub fn total(j: jagged[f64]) -> f64 {
        sum[i in 0..len(j), k in 0..len(j[i])](j[i][k])
    }
}

fn main() {}
