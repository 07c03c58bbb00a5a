//! A deterministic rendering of the AST for snapshot tests.
//!
//! Expressions print as fully parenthesized S-expressions
//! (`(+ a (* b c))`, `(index A i k)`, `(sum [k] body)`), so precedence,
//! `where` attachment and index slots are visible at a glance. Types,
//! paths and `use` trees print in source syntax, with dimension
//! expressions fully parenthesized. Blocks print one statement per line;
//! an expression statement ends with `;`, the tail does not. Spans are
//! never printed, so a tree parsed from tokens and one parsed from text
//! print the same.

use std::fmt::Write;

use crate::syntax::ast::*;

/// Renders a program, one item per line (blocks span several lines).
pub fn pretty_program(program: &Program) -> String {
    let mut printer = Printer::default();
    for item in &program.items {
        printer.item(item);
        printer.out.push('\n');
    }
    printer.out
}

/// Renders a type as written (`[f32; N, 3]`).
pub fn pretty_type(ty: &Type) -> String {
    let mut printer = Printer::default();
    printer.ty(ty);
    printer.out
}

/// Renders one expression.
pub fn pretty_expr(expr: &Expr) -> String {
    let mut printer = Printer::default();
    printer.expr(expr);
    printer.out
}

#[derive(Default)]
struct Printer {
    out: String,
    indent: usize,
}

impl Printer {
    fn push(&mut self, text: &str) {
        self.out.push_str(text);
    }

    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    /// Items separated by `sep`, each printed by `f`.
    fn list<T>(&mut self, items: &[T], sep: &str, mut f: impl FnMut(&mut Printer, &T)) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.push(sep);
            }
            f(self, item);
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Fn(func) => self.func("fn", func),
            Item::DerivRule(func) => self.func("@fn", func),
            Item::Use(use_item) => {
                self.push("(");
                self.vis(use_item.vis);
                self.push("use ");
                self.use_tree(&use_item.tree);
                self.push(")");
            }
            Item::Mod(module) => {
                self.push("(");
                self.vis(module.vis);
                self.push("mod ");
                self.push(&module.name.name);
                self.indent += 1;
                for item in &module.items {
                    self.newline();
                    self.item(item);
                }
                self.indent -= 1;
                self.push(")");
            }
            Item::Const(constant) => {
                self.push("(");
                self.vis(constant.vis);
                self.push("const ");
                self.push(&constant.name.name);
                if let Some(ty) = &constant.ty {
                    self.push(": ");
                    self.ty(ty);
                }
                self.push(" ");
                self.expr(&constant.value);
                self.push(")");
            }
            Item::Stmt(stmt) => self.stmt(stmt),
        }
    }

    fn vis(&mut self, vis: Visibility) {
        if vis == Visibility::Public {
            self.push("pub ");
        }
    }

    /// `(pub fn name (doc "...") (attr name args) (x: T, y) -> R { ... })`.
    fn func(&mut self, keyword: &str, func: &FnItem) {
        self.push("(");
        self.vis(func.vis);
        self.push(keyword);
        self.push(" ");
        self.push(&func.name.name);
        for doc in &func.docs {
            let _ = write!(self.out, " (doc {doc:?})");
        }
        for attr in &func.attrs {
            self.push(" (attr ");
            self.push(&attr.name.name);
            for arg in &attr.args {
                self.push(" ");
                self.push(&arg.name);
            }
            self.push(")");
        }
        self.push(" (");
        self.list(&func.params, ", ", |p, param| p.param(param));
        self.push(")");
        if let Some(ret) = &func.ret {
            self.push(" -> ");
            self.ty(ret);
        }
        match &func.body {
            Some(body) => {
                self.push(" ");
                self.block(body);
            }
            None => self.push(";"),
        }
        self.push(")");
    }

    fn param(&mut self, param: &Param) {
        self.push(&param.name.name);
        if let Some(ty) = &param.ty {
            self.push(": ");
            self.ty(ty);
        }
    }

    fn use_tree(&mut self, tree: &UseTree) {
        match tree {
            UseTree::Path { segment, rest } => {
                self.push(&segment.name);
                self.push("::");
                self.use_tree(rest);
            }
            UseTree::Name { name, alias } => {
                self.push(&name.name);
                if let Some(alias) = alias {
                    self.push(" as ");
                    self.push(&alias.name);
                }
            }
            UseTree::Glob(_) => self.push("*"),
            UseTree::Group(trees, _) => {
                self.push("{");
                self.list(trees, ", ", |p, tree| p.use_tree(tree));
                self.push("}");
            }
        }
    }

    fn ty(&mut self, ty: &Type) {
        match ty {
            Type::Scalar(kind, _) => self.push(kind.name()),
            Type::Str(_) => self.push("str"),
            Type::Tensor { elem, dims, .. } => {
                self.push("[");
                self.ty(elem);
                if let Some(dims) = dims {
                    self.push("; ");
                    self.list(dims, ", ", |p, dim| p.dim(dim));
                }
                self.push("]");
            }
            Type::DynRank { elem, .. } => {
                self.push("[");
                self.ty(elem);
                self.push("; *]");
            }
            Type::Jagged { elem, .. } => {
                self.push("jagged[");
                self.ty(elem);
                self.push("]");
            }
            Type::Tuple(elems, _) => {
                self.push("(");
                self.list(elems, ", ", |p, ty| p.ty(ty));
                if elems.len() == 1 {
                    self.push(",");
                }
                self.push(")");
            }
            Type::Fn { params, ret, .. } => {
                self.push("(");
                self.list(params, ", ", |p, ty| p.ty(ty));
                self.push(") -> ");
                self.ty(ret);
            }
        }
    }

    fn dim(&mut self, dim: &DimExpr) {
        match dim {
            DimExpr::Lit(value, _) => {
                let _ = write!(self.out, "{value}");
            }
            DimExpr::Name(name) => self.push(&name.name),
            DimExpr::Unknown(_) => self.push("?"),
            DimExpr::Binary { op, lhs, rhs, .. } => {
                self.push("(");
                self.dim(lhs);
                let _ = write!(self.out, " {} ", op.symbol());
                self.dim(rhs);
                self.push(")");
            }
        }
    }

    /// `{ tail }` on one line when the block is only a tail, otherwise one
    /// statement per line.
    fn block(&mut self, block: &Block) {
        match (&block.stmts[..], &block.tail) {
            ([], None) => self.push("{}"),
            ([], Some(tail)) => {
                self.push("{ ");
                self.expr(tail);
                self.push(" }");
            }
            (stmts, tail) => {
                self.push("{");
                self.indent += 1;
                for stmt in stmts {
                    self.newline();
                    self.stmt(stmt);
                }
                if let Some(tail) = tail {
                    self.newline();
                    self.expr(tail);
                }
                self.indent -= 1;
                self.newline();
                self.push("}");
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Let(stmt) => self.let_stmt(stmt),
            Stmt::Expr(expr) => {
                self.expr(expr);
                self.push(";");
            }
            Stmt::Item(item) => self.item(item),
        }
    }

    /// `(let C [i j] value (where ...))`.
    fn let_stmt(&mut self, stmt: &LetStmt) {
        self.push("(let ");
        self.pattern(&stmt.pat);
        if let Some(slots) = &stmt.indices {
            self.push(" [");
            self.list(slots, " ", |p, slot| p.slot(slot));
            self.push("]");
        }
        if let Some(ty) = &stmt.ty {
            self.push(": ");
            self.ty(ty);
        }
        self.push(" ");
        self.expr(&stmt.value);
        self.where_clause(&stmt.where_clause);
        self.push(")");
    }

    fn slot(&mut self, slot: &IndexSlot) {
        match slot {
            IndexSlot::Var(var) => self.push(&var.name),
            IndexSlot::Ranged { var, range } => self.ranged(var, range),
            IndexSlot::Lit(value, _) => {
                let _ = write!(self.out, "{value}");
            }
            IndexSlot::Rest(name) => {
                self.push("..");
                self.push(&name.name);
            }
        }
    }

    /// `(in i (.. 0 N))`.
    fn ranged(&mut self, var: &Ident, range: &RangeExpr) {
        self.push("(in ");
        self.push(&var.name);
        self.push(" ");
        self.range(range);
        self.push(")");
    }

    /// `(.. a b)` or `(..= a b)`.
    fn range(&mut self, range: &RangeExpr) {
        self.push(if range.inclusive { "(..= " } else { "(.. " });
        self.expr(&range.start);
        self.push(" ");
        self.expr(&range.end);
        self.push(")");
    }

    /// ` (where (= z e) guard (in i (.. a b)))`, or nothing.
    fn where_clause(&mut self, items: &[WhereItem]) {
        if items.is_empty() {
            return;
        }
        self.push(" (where");
        for item in items {
            self.push(" ");
            match item {
                WhereItem::Bind { name, value, .. } => {
                    self.push("(= ");
                    self.push(&name.name);
                    self.push(" ");
                    self.expr(value);
                    self.push(")");
                }
                WhereItem::Guard(expr) => self.expr(expr),
                WhereItem::Range { var, range, .. } => self.ranged(var, range),
            }
        }
        self.push(")");
    }

    fn pattern(&mut self, pat: &Pattern) {
        match pat {
            Pattern::Name(name) => self.push(&name.name),
            Pattern::Wildcard(_) => self.push("_"),
            Pattern::Tuple(pats, _) => self.patterns("tuple", pats),
            Pattern::Lit(lit, _) => self.lit(lit),
            Pattern::Range { lo, hi, inclusive, .. } => {
                self.push(if *inclusive { "(..= " } else { "(.. " });
                self.lit(lo);
                self.push(" ");
                self.lit(hi);
                self.push(")");
            }
            Pattern::At(name, pat) => {
                self.push("(@ ");
                self.push(&name.name);
                self.push(" ");
                self.pattern(pat);
                self.push(")");
            }
            Pattern::Or(alts, _) => self.patterns("or", alts),
        }
    }

    /// `(tag p1 p2 ...)`.
    fn patterns(&mut self, tag: &str, pats: &[Pattern]) {
        self.tagged(tag, pats, Self::pattern);
    }

    /// `(head x1 x2 ...)`, each item printed by `each`.
    fn tagged<T>(&mut self, head: &str, items: &[T], each: fn(&mut Self, &T)) {
        self.push("(");
        self.push(head);
        for item in items {
            self.push(" ");
            each(self, item);
        }
        self.push(")");
    }

    fn lit(&mut self, lit: &Lit) {
        let suffix = |kind: &Option<ScalarKind>| kind.map_or("", |kind| kind.name());
        let _ = match lit {
            Lit::Int(value, kind) => write!(self.out, "{value}{}", suffix(kind)),
            Lit::Float(text, kind) => write!(self.out, "{text}{}", suffix(kind)),
            Lit::Bool(value) => write!(self.out, "{value}"),
            Lit::Str(text) => write!(self.out, "{text:?}"),
        };
    }

    /// `(head a b c)`.
    fn call_like(&mut self, head: &str, args: &[Expr]) {
        self.tagged(head, args, Self::expr);
    }

    fn expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::Lit(lit) => self.lit(lit),
            ExprKind::Interp(parts) => {
                self.push("(interp");
                for part in parts {
                    self.push(" ");
                    match part {
                        StrPart::Text(text) => {
                            let _ = write!(self.out, "{text:?}");
                        }
                        StrPart::Interp { expr, precision } => {
                            self.push("{");
                            self.expr(expr);
                            if let Some(precision) = precision {
                                let _ = write!(self.out, ":.{precision}");
                            }
                            self.push("}");
                        }
                    }
                }
                self.push(")");
            }
            ExprKind::Path(segments) => {
                self.list(segments, "::", |p, segment| p.push(&segment.name));
            }
            ExprKind::Unary { op, expr } => {
                self.push(match op {
                    UnOp::Neg => "(- ",
                    UnOp::Not => "(! ",
                });
                self.expr(expr);
                self.push(")");
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let _ = write!(self.out, "({} ", op.symbol());
                self.expr(lhs);
                self.push(" ");
                self.expr(rhs);
                self.push(")");
            }
            ExprKind::Cast { expr, ty } => {
                self.push("(as ");
                self.expr(expr);
                self.push(" ");
                self.ty(ty);
                self.push(")");
            }
            ExprKind::Call { callee, args } => {
                self.push("(call ");
                self.expr(callee);
                for arg in args {
                    self.push(" ");
                    self.expr(arg);
                }
                self.push(")");
            }
            ExprKind::Index { base, args } => {
                self.push("(index ");
                self.expr(base);
                for arg in args {
                    self.push(" ");
                    match arg {
                        IndexArg::Expr(expr) => self.expr(expr),
                        IndexArg::Rest(name) => {
                            self.push("..");
                            self.push(&name.name);
                        }
                    }
                }
                self.push(")");
            }
            ExprKind::Field { base, index, .. } => {
                self.push("(field ");
                self.expr(base);
                let _ = write!(self.out, " {index})");
            }
            ExprKind::Reduce { op, vars, body, where_clause, .. } => {
                self.push("(");
                self.push(op.name());
                self.push(" [");
                self.list(vars, " ", |p, var| match &var.range {
                    Some(range) => p.ranged(&var.var, range),
                    None if var.rest => p.push(&format!("..{}", var.var.name)),
                    None => p.push(&var.var.name),
                });
                self.push("] ");
                self.expr(body);
                self.where_clause(where_clause);
                self.push(")");
            }
            ExprKind::If { cond, then, els } => {
                self.push("(if ");
                self.expr(cond);
                self.push(" ");
                self.block(then);
                if let Some(els) = els {
                    self.push(" else ");
                    self.expr(els);
                }
                self.push(")");
            }
            ExprKind::Match { scrutinee, arms } => {
                self.push("(match ");
                self.expr(scrutinee);
                self.indent += 1;
                for arm in arms {
                    self.newline();
                    self.push("(");
                    self.pattern(&arm.pat);
                    if let Some(guard) = &arm.guard {
                        self.push(" if ");
                        self.expr(guard);
                    }
                    self.push(" => ");
                    self.expr(&arm.body);
                    self.push(")");
                }
                self.indent -= 1;
                self.push(")");
            }
            ExprKind::Block(block) => self.block(block),
            ExprKind::Array(elems) => self.call_like("array", elems),
            ExprKind::Jagged(elems) => self.call_like("jagged", elems),
            ExprKind::Comprehension { body, clauses, rows } => {
                self.push(if *rows { "(jagged-comp " } else { "(comp " });
                self.expr(body);
                for clause in clauses {
                    self.push(" ");
                    match clause {
                        CompClause::Gen { var, iter } => {
                            self.push("(in ");
                            self.push(&var.name);
                            self.push(" ");
                            self.expr(iter);
                            self.push(")");
                        }
                        CompClause::Filter(cond) => {
                            self.push("(filter ");
                            self.expr(cond);
                            self.push(")");
                        }
                    }
                }
                self.push(")");
            }
            ExprKind::Tuple(elems) => self.call_like("tuple", elems),
            ExprKind::Lambda { params, body } => {
                self.push("(lambda (");
                self.list(params, ", ", |p, param| p.param(param));
                self.push(") ");
                self.expr(body);
                self.push(")");
            }
            ExprKind::Deriv { target, wrt } => {
                let _ = write!(self.out, "(deriv {} {})", target.name, wrt.name);
            }
            ExprKind::Differential(target) => {
                let _ = write!(self.out, "(d {})", target.name);
            }
            ExprKind::Range(range) => self.range(range),
        }
    }
}
