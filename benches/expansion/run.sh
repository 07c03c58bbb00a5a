#!/usr/bin/env bash
# Measures macro expansion time (see docs/architecture.md, "Measuring").
#
#   bash benches/expansion/run.sh [PROFILE]     PROFILE: dev (default) or release
#
# 1. In one process, `einlang_core::expand` on block.ein (100 lines) 20 times,
#    and on a 4-line block 20 times: the first call pays for loading the
#    standard library, later calls show what a crate's second, third, ...
#    `einlang!` call costs. Each prints every stage's and `opt` pass's time:
#    the first call's and the mean of the others.
# 2. `cargo build` of a generated crate with 20 `einlang!` blocks (each a
#    copy of block.ein in its own module), after its dependencies are built:
#    the time is the crate's own compilation, expansion included.
# 3. `cargo build --example mnist` after touching the example.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
profile="${1:-dev}"
flag=(); [ "$profile" = release ] && flag=(--release)
cd "$root"

cargo build -q "${flag[@]}" -p einlang-core --example expand_time
bin="$root/target/$([ "$profile" = release ] && echo release || echo debug)/examples/expand_time"
tiny="$(mktemp -d)/tiny.ein"
printf 'pub fn add(a: [f32; N], b: [f32; N]) -> [f32; N] {\n    let c[i] = a[i] + b[i];\n    c\n}\n' > "$tiny"
"$bin" benches/expansion/block.ein 20
"$bin" "$tiny" 20

crate="${TMPDIR:-/tmp}/einlang-expansion-bench"
rm -rf "$crate" && mkdir -p "$crate/src"
cat > "$crate/Cargo.toml" <<TOML
[package]
name = "einlang-expansion-bench"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
einlang = { path = "$root" }
[workspace]
TOML
{
    for i in $(seq 1 20); do
        echo "#[allow(dead_code)] mod m$i { einlang::einlang! {"
        cat benches/expansion/block.ein
        echo "} }"
    done
    echo "fn main() {}"
} > "$crate/src/main.rs"
export CARGO_TARGET_DIR="$crate/target"
(cd "$crate" && cargo build -q "${flag[@]}" 2>/dev/null || cargo build "${flag[@]}")
for run in 1 2 3; do
    touch "$crate/src/main.rs"
    start=$(date +%s.%N)
    (cd "$crate" && cargo build -q "${flag[@]}")
    end=$(date +%s.%N)
    printf 'cargo build (%s) of a crate with 20 einlang! blocks, run %d: %.2f s\n' "$profile" "$run" "$(echo "$end - $start" | bc)"
done
unset CARGO_TARGET_DIR
cargo build -q "${flag[@]}" --example mnist
for run in 1 2 3; do
    touch examples/mnist.rs
    start=$(date +%s.%N)
    cargo build -q "${flag[@]}" --example mnist
    end=$(date +%s.%N)
    printf 'cargo build (%s) --example mnist, run %d: %.2f s\n' "$profile" "$run" "$(echo "$end - $start" | bc)"
done
