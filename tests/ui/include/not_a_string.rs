mod kernels {
    einlang::include_ein!(kernels);
}

fn main() {}
