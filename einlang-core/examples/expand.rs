//! Prints what `einlang!` generates for a source file, formatted:
//! `cargo run -p einlang-core --example expand -- prog.ein [--ir]`
//! (`--cuda` compiles `#[device(cuda)]` functions, as the facade's feature
//! `cuda` does).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: expand FILE.ein [--ir] [--hir] [--facts] [--cuda]");
        return ExitCode::FAILURE;
    };
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let options = einlang_core::Options { cuda: args.iter().any(|a| a == "--cuda"), ..Default::default() };
    match einlang_core::compile_str(&src, &options) {
        Ok(c) => {
            if args.iter().any(|a| a == "--hir") {
                println!("{}", einlang_core::analysis::pretty::pretty_hir(&c.hir, &c.tables));
            }
            if args.iter().any(|a| a == "--facts") {
                for f in c.recurrences() {
                    println!("{f:#?}");
                }
            }
            if args.iter().any(|a| a == "--ir") {
                println!("{}", einlang_core::ir::pretty::pretty_program(&c.ir));
            }
            match syn::parse2::<syn::File>(c.rust.clone()) {
                Ok(file) => println!("{}", prettyplease::unparse(&file)),
                Err(e) => println!("(unparsable: {e})\n{}", c.rust),
            }
            ExitCode::SUCCESS
        }
        Err(diags) => {
            for d in diags {
                eprintln!("{}", d.render_text());
            }
            ExitCode::FAILURE
        }
    }
}
