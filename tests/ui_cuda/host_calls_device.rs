// Compiled with the feature `cuda` (`tests/ui.rs`, `ui_cuda`). trybuild
// compiles this file in its own crate under `target/tests/trybuild/einlang`,
// whose manifest directory is four levels below the repository's root. The
// error comes from analysis, before lowering, so it points into the `.ein`
// file.
mod prog {
    einlang::include_ein!("../../../../tests/ui_cuda/host_calls_device.ein");
}

fn main() {}
