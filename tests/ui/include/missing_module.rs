// trybuild compiles this file in its own crate under
// `target/tests/trybuild/einlang`, whose manifest directory is four levels
// below the repository's root.
mod prog {
    einlang::include_ein!("../../../../tests/ui/include/missing_module.ein");
}

fn main() {}
