mod prog {
    einlang::include_ein!("tests/ui/include/cycle_a.ein");
}

fn main() {}
