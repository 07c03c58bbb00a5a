//! Functions nested in function bodies (`fn outer() { fn inner() { .. } .. }`).
//!
//! A nested function cannot capture the locals around it (as in Rust), so
//! it is an ordinary function of the enclosing module under a name that
//! cannot clash (`outer__inner`). The statement that defined it becomes a
//! block-level `use self::outer__inner as inner;`, which the resolver binds
//! in the block's scope before the block's other statements, so the name is
//! visible in the whole block and nowhere else.

use std::collections::HashSet;

use super::ast::{Block, FnItem, Ident, Item, Program, Stmt, UseItem, UseTree, Visibility};

/// Moves every nested function of `program` to its module (see the module
/// documentation).
pub fn hoist_nested_fns(program: &mut Program) {
    hoist_items(&mut program.items);
}

fn hoist_items(items: &mut Vec<Item>) {
    let mut taken: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.name.name.clone()),
            _ => None,
        })
        .collect();
    let mut hoisted = Vec::new();
    for item in items.iter_mut() {
        match item {
            Item::Fn(f) => {
                let outer = f.name.name.clone();
                if let Some(body) = &mut f.body {
                    hoist_block(&outer, body, &[], &mut taken, &mut hoisted);
                }
            }
            Item::Mod(m) => hoist_items(&mut m.items),
            _ => {}
        }
    }
    items.extend(hoisted.into_iter().map(Item::Fn));
}

/// `use self::mangled as original;`
fn use_stmt(original: &Ident, mangled: &str) -> Stmt {
    let span = original.span;
    let tree = UseTree::Path {
        segment: Ident { name: "self".to_string(), span },
        rest: Box::new(UseTree::Name {
            name: Ident { name: mangled.to_string(), span },
            alias: Some(original.clone()),
        }),
    };
    Stmt::Item(Box::new(Item::Use(UseItem { vis: Visibility::Private, tree, span })))
}

/// Hoists the functions nested in `block` (of the function named `outer`).
/// `visible` are the nested functions of the enclosing blocks: as in Rust,
/// an item of a block is visible in the bodies of the block's other items.
fn hoist_block(
    outer: &str,
    block: &mut Block,
    visible: &[(Ident, String)],
    taken: &mut HashSet<String>,
    out: &mut Vec<FnItem>,
) {
    let mut here = visible.to_vec();
    for stmt in &block.stmts {
        let Stmt::Item(item) = stmt else { continue };
        let Item::Fn(f) = &**item else { continue };
        let mut name = format!("{outer}__{}", f.name.name);
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = format!("{outer}__{}_{n}", f.name.name);
        }
        here.push((f.name.clone(), name));
    }
    let mut k = visible.len();
    for stmt in &mut block.stmts {
        let Stmt::Item(item) = stmt else { continue };
        let Item::Fn(f) = &mut **item else { continue };
        let (original, name) = here[k].clone();
        k += 1;
        let mut f = f.clone();
        f.vis = Visibility::Private;
        f.name = Ident { name: name.clone(), span: original.span };
        if let Some(body) = &mut f.body {
            hoist_block(&name, body, &here, taken, out);
            let mut stmts: Vec<Stmt> = here.iter().map(|(o, m)| use_stmt(o, m)).collect();
            stmts.append(&mut body.stmts);
            body.stmts = stmts;
        }
        out.push(f);
        *stmt = use_stmt(&original, &name);
    }
}
