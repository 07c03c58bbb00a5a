#!/usr/bin/env bash
# Tries every example program of the seed implementation (a checkout of
# github.com/einlang/einlang) unchanged through `einlang::include_ein!`.
#
#   bash docs/seed-examples.sh SEED_CHECKOUT [WORK_DIR]
#
# WORK_DIR (default /tmp/seed-examples) gets a Cargo project with one binary
# per `examples/**/*.ein`, each `mod prog { einlang::include_ein!(...) }`
# calling `prog::main()`. Every binary that compiles is run from its source
# file's directory (where the program's relative data paths point). The
# summary lists, per program, COMPILE-ERROR (first diagnostic), RUN-ERROR
# (exit status and last line of stderr) or OK; with PY_OUT=dir holding the
# seed's own outputs (`NAME.out`, NAME as in the binary names), OK becomes
# SAME or DIFF.
set -uo pipefail
seed=$(cd "${1:?usage: seed-examples.sh SEED_CHECKOUT [WORK_DIR]}" && pwd)
work=${2:-/tmp/seed-examples}
here=$(cd "$(dirname "$0")/.." && pwd)

mkdir -p "$work/src/bin" "$work/out"
rm -f "$work"/src/bin/*.rs "$work"/out/*
rm -rf "$work/examples" && cp -r "$seed/examples" "$work/examples"
cat > "$work/Cargo.toml" <<EOF
[package]
name = "seed-examples"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
einlang = { path = "$here" }

[profile.dev]
opt-level = 1

[workspace]
EOF

name_of() { echo "${1#examples/}" | sed 's/\.ein$//; s/[^A-Za-z0-9]/_/g'; }

programs=$(cd "$work" && find examples -name '*.ein' | sort)
for f in $programs; do
    cat > "$work/src/bin/$(name_of "$f").rs" <<EOF
mod prog {
    einlang::include_ein!("$f");
}
fn main() {
    if let Err(e) = prog::main() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
EOF
done

# A binary left from an earlier run must not stand for one that fails now.
for f in $programs; do rm -f "$work/target/debug/$(name_of "$f")"; done
(cd "$work" && cargo build --bins --keep-going --message-format short > build.log 2>&1)

for f in $programs; do
    n=$(name_of "$f")
    bin="$work/target/debug/$n"
    if [ ! -x "$bin" ]; then
        first=$(grep -m1 -E "^src/bin/$n\.rs:.*error" "$work/build.log" | sed 's/^[^ ]* //')
        echo "COMPILE-ERROR $f: $first"
        continue
    fi
    (cd "$work/$(dirname "$f")" && timeout 300 "$bin" > "$work/out/$n.out" 2> "$work/out/$n.err")
    rc=$?
    if [ $rc != 0 ]; then
        echo "RUN-ERROR $f: exit $rc: $(tail -n1 "$work/out/$n.err")"
    elif [ -n "${PY_OUT:-}" ] && [ -f "$PY_OUT/$n.out" ]; then
        if cmp -s "$work/out/$n.out" "$PY_OUT/$n.out"; then echo "SAME $f"; else echo "DIFF $f"; fi
    else
        echo "OK $f"
    fi
done
