fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(path).unwrap();
    match einlang_core::compile_str(&src, &einlang_core::Options::default()) {
        Ok(c) => {
            println!("{}", einlang_core::ir::pretty::pretty_program(&c.ir));
            let file = syn::parse2::<syn::File>(c.rust).unwrap();
            println!("{}", prettyplease::unparse(&file));
        }
        Err(d) => println!("{:?}", d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()),
    }
}
