mod kernels {
    einlang::include_ein!("tests/ui/include/no_such_file.ein");
}

fn main() {}
