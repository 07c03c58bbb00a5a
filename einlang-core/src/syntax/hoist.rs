//! Items nested in blocks (`fn outer() { fn inner() { .. } .. }`, `let v =
//! { const K: i64 = 3; .. };`, `mod m { .. }`).
//!
//! A nested function cannot capture the locals around it (as in Rust), so
//! it is an ordinary function of the enclosing module under a name that
//! cannot clash (`outer__inner`); a nested `const` or inline `mod`
//! likewise. The statement that defined the item becomes a block-level
//! `use self::outer__inner as inner;`, which the resolver binds in the
//! block's scope before the block's other statements, so the name is
//! visible in the whole block (nested blocks included) and nowhere else. Blocks at any depth count: a
//! function body, a block expression, an `if` branch, a `match` arm, a
//! lambda body, and the program's top-level statements (which become
//! `main`).

use std::collections::HashSet;

use super::ast::{Block, Expr, Ident, Item, Program, Stmt, UseItem, UseTree, Visibility};
use super::visit::{expr_children_mut, stmt_children_mut, ChildMut};

/// Moves every nested function, constant and inline module of `program` to
/// its module (see the module documentation).
pub fn hoist_nested_fns(program: &mut Program) {
    hoist_items(&mut program.items);
}

fn hoist_items(items: &mut Vec<Item>) {
    let mut taken: HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some(f.name.name.clone()),
            Item::Const(c) => Some(c.name.name.clone()),
            Item::Mod(m) => Some(m.name.name.clone()),
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
            // Top-level statements are `main`'s body; the program's items
            // are visible there already.
            Item::Stmt(s) => {
                stmt_blocks(s, &mut |b| hoist_block("main", b, &[], &mut taken, &mut hoisted));
            }
            _ => {}
        }
    }
    items.extend(hoisted);
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

/// The name of a nested item that is hoisted.
fn nested_name(stmt: &Stmt) -> Option<&Ident> {
    let Stmt::Item(item) = stmt else { return None };
    match &**item {
        Item::Fn(f) => Some(&f.name),
        Item::Const(c) => Some(&c.name),
        Item::Mod(m) if !m.external => Some(&m.name),
        _ => None,
    }
}

/// Hoists the items nested in `block` (inside the function named `outer`)
/// and in the blocks nested in its statements. `visible` are the nested
/// functions of the enclosing blocks: as in Rust, an item of a block is
/// visible in the bodies of the block's other items.
fn hoist_block(
    outer: &str,
    block: &mut Block,
    visible: &[(Ident, String)],
    taken: &mut HashSet<String>,
    out: &mut Vec<Item>,
) {
    let mut here = visible.to_vec();
    for stmt in &block.stmts {
        let Some(original) = nested_name(stmt) else { continue };
        let mut name = format!("{outer}__{}", original.name);
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = format!("{outer}__{}_{n}", original.name);
        }
        here.push((original.clone(), name));
    }
    let mut k = visible.len();
    for stmt in &mut block.stmts {
        if nested_name(stmt).is_none() {
            stmt_blocks(stmt, &mut |b| hoist_block(outer, b, &here, taken, out));
            continue;
        }
        let (original, name) = here[k].clone();
        k += 1;
        let Stmt::Item(item) = stmt else { continue };
        let mut item = (**item).clone();
        match &mut item {
            Item::Fn(f) => {
                f.vis = Visibility::Private;
                f.name = Ident { name: name.clone(), span: original.span };
                if let Some(body) = &mut f.body {
                    hoist_block(&name, body, &here, taken, out);
                    let mut stmts: Vec<Stmt> = here.iter().map(|(o, m)| use_stmt(o, m)).collect();
                    stmts.append(&mut body.stmts);
                    body.stmts = stmts;
                }
            }
            Item::Const(c) => {
                c.vis = Visibility::Private;
                c.name = Ident { name: name.clone(), span: original.span };
            }
            // A module's items see only paths (`super::` is the module
            // around the function, as in Rust), not the block's items.
            Item::Mod(m) => {
                m.vis = Visibility::Private;
                m.name = Ident { name: name.clone(), span: original.span };
                hoist_items(&mut m.items);
            }
            _ => {}
        }
        out.push(item);
        *stmt = use_stmt(&original, &name);
    }
    if let Some(t) = &mut block.tail {
        expr_blocks(t, &mut |b| hoist_block(outer, b, &here, taken, out));
    }
}

/// Calls `f` on each block inside statement `s`, not on blocks nested in
/// those.
fn stmt_blocks(s: &mut Stmt, f: &mut dyn FnMut(&mut Block)) {
    stmt_children_mut(s, &mut |c| child_blocks(c, f));
}

/// Calls `f` on each block inside expression `e`, not on blocks nested in
/// those.
fn expr_blocks(e: &mut Expr, f: &mut dyn FnMut(&mut Block)) {
    expr_children_mut(e, &mut |c| child_blocks(c, f));
}

fn child_blocks(c: ChildMut<'_>, f: &mut dyn FnMut(&mut Block)) {
    match c {
        ChildMut::Block(b) => f(b),
        ChildMut::Expr(x) => expr_blocks(x, f),
    }
}
