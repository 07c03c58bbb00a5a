#!/usr/bin/env bash
# Tries every example program of the seed implementation (a checkout of
# github.com/einlang/einlang) unchanged through `einlang::include_ein!`.
#
#   [PY_OUT=dir] bash docs/seed-examples.sh SEED_CHECKOUT [WORK_DIR]
#
# WORK_DIR (default /tmp/seed-examples) gets a Cargo project with one binary
# per `examples/**/*.ein`, each `mod prog { einlang::include_ein!(...) }`
# calling `prog::main()`. A file without top-level statements is a library:
# it compiles to a module with no `main`, and its binary only compiles it.
# Every binary that compiles is run from its source file's directory (where
# the program's relative data paths point). The summary lists, per program,
# COMPILE-ERROR (first diagnostic), RUN-ERROR (exit status and last line of
# stderr), LIBRARY or OK; with PY_OUT=dir holding the seed's own outputs
# (`NAME.out`, optionally `NAME.err` and `NAME.rc`, NAME as in the binary
# names), OK becomes SAME, DIGITS (only printed float digits differ) or DIFF.
#
# It also writes WORK_DIR/seed-examples.md, a Markdown table (example,
# compiles, same output as the seed, note) with totals; see the
# classification in the Python part below. Needs python3.
set -uo pipefail
seed=$(cd "${1:?usage: seed-examples.sh SEED_CHECKOUT [WORK_DIR]}" && pwd)
work=${2:-/tmp/seed-examples}
here=$(cd "$(dirname "$0")/.." && pwd)

mkdir -p "$work/src/bin" "$work/out"
rm -f "$work"/out/*
rm -rf "$work/examples" && cp -r "$seed/examples" "$work/examples"
cat > "$work/Cargo.toml" <<TOML
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
TOML

cat > "$work/report.py" <<'PY'
import json, os, re, subprocess, sys

mode, work, seed, py_out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def name_of(f):
    return re.sub(r'[^A-Za-z0-9]', '_', f[len('examples/'):-len('.ein')])

def code_of(text):
    """The source without comments and string literals (strings become "")."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return re.sub(r'//[^\n]*', '', text)

ITEM = {'fn', 'pub', 'use', 'mod', 'const', 'type', 'struct', 'enum', 'impl', 'trait', 'extern', '#'}

def has_statements(code):
    """Heuristic: a token at bracket depth 0 where an item or statement
    starts that is not an item keyword (`fn`, `use`, `pub`, ...) starts a
    top-level statement."""
    depth, start, attr = 0, True, False
    for tok in re.findall(r'[A-Za-z_][A-Za-z0-9_]*|\S', code):
        if depth == 0 and start and tok != ';':
            if tok not in ITEM:
                return True
            start, attr = False, tok == '#'
        if tok in '([{': depth += 1
        elif tok in ')]}':
            depth -= 1
            if depth == 0 and (tok == '}' or (tok == ']' and attr)): start = True
        elif tok == ';' and depth == 0: start = True
    return False

programs = sorted(os.path.relpath(os.path.join(d, f), work)
                  for d, _, fs in os.walk(os.path.join(work, 'examples'))
                  for f in fs if f.endswith('.ein'))
src = {f: code_of(open(os.path.join(work, f), encoding='utf-8').read()) for f in programs}

if mode == 'wrappers':
    # Rewritten only when changed, so Cargo rebuilds only what changed.
    for f in programs:
        if has_statements(src[f]):
            body = ('mod prog {\n    einlang::include_ein!("%s");\n}\nfn main() {\n'
                    '    if let Err(e) = prog::main() {\n        eprintln!("error: {e}");\n'
                    '        std::process::exit(1);\n    }\n}\n' % f)
        else:
            body = ('// A library: no top-level statements, so no `main`.\n#[allow(dead_code, unused_imports)]\n'
                    'mod prog {\n    einlang::include_ein!("%s");\n}\nfn main() {\n'
                    '    eprintln!("library");\n    std::process::exit(64);\n}\n' % f)
        path = os.path.join(work, 'src', 'bin', name_of(f) + '.rs')
        if not os.path.exists(path) or open(path).read() != body:
            open(path, 'w').write(body)
    sys.exit(0)

# mode == 'report': read the build's JSON messages, run, compare, classify.
built, first_error = {}, {}
for line in open(os.path.join(work, 'build.json'), encoding='utf-8'):
    try: m = json.loads(line)
    except ValueError: continue
    tgt = m.get('target', {}).get('name')
    if m.get('reason') == 'compiler-artifact' and m.get('executable'):
        built[tgt] = m['executable']
    elif m.get('reason') == 'compiler-message' and m['message']['level'] == 'error' and tgt not in first_error:
        first_error[tgt] = m['message']['message'].strip()

NUM = re.compile(r'[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?')

def compare(ours, theirs):
    """'same' (identical bytes), 'digits' (the same text around the numbers
    and numbers equal to a relative 1e-5: f32 values printed with f64 digits,
    or summed in another order), 'escapes' (the same once the seed's
    unprocessed `\\n` is a newline), or None."""
    if ours == theirs: return 'same'
    def close(a, b):
        if NUM.split(a) != NUM.split(b): return False
        xs, ys = NUM.findall(a), NUM.findall(b)
        return len(xs) == len(ys) and all(
            abs(float(x) - float(y)) <= 1e-5 * max(1e-3, abs(float(x)), abs(float(y))) for x, y in zip(xs, ys))
    if close(ours, theirs): return 'digits'
    t = theirs.replace('\\n', '\n')
    if ours == t or close(ours, t): return 'escapes'
    return None

def first_diff(ours, theirs, digits_ok=False):
    a, b = ours.splitlines(), theirs.splitlines()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else '(end)'
        y = b[i] if i < len(b) else '(end)'
        if x != y and not (digits_ok and compare(x, y)):
            return 'line %d: `%s`, seed `%s`' % (i + 1, x[:60], y[:60])
    return ''

# Compile errors that follow from a deliberate rule of this crate
# (docs/language.md, "Differences from the seed"): message pattern, rule.
RULES = [
    (r'takes a float, found `i', 'math functions take floats'),
    (r'`i64`', 'lengths and indices are `i64`'),
    (r'found a float literal', 'no float literal as an integer'),
    (r'index out of bounds', 'reads are bounds-checked'),
    (r'elements of a comprehension must be .* found `\(\)`', 'no comprehension of `assert`'),
    (r'mismatched types: `f(32|64)` . `f(32|64)`', 'no implicit f32/f64 conversion'),
]

# Output differences explained by hand (the seed's numbers are wrong).
CHECKED = {
    'examples/demos/computer_vision_tensors.ein':
        'checked by hand: the seed transposes `small_features` (its kernel does not depend on `c`, so '
        'rows must be equal), and `global_avg` is rounding noise (~1e-6) whose sign picks the attention weight',
}

def seed_result(n):
    if not py_out or not os.path.exists(os.path.join(py_out, n + '.out')): return None
    out = open(os.path.join(py_out, n + '.out'), encoding='utf-8', errors='replace').read()
    err_p, rc_p = os.path.join(py_out, n + '.err'), os.path.join(py_out, n + '.rc')
    err = open(err_p, encoding='utf-8', errors='replace').read() if os.path.exists(err_p) else ''
    rc = open(rc_p).read().strip() if os.path.exists(rc_p) else '0'
    failed = rc != '0' or re.search(r'Traceback|^einlang: |^error', err, re.M)
    last = [l for l in err.splitlines() if l.strip()]
    why = next((l for l in last if re.search(r'rror', l) and 'aborting' not in l), last[-1] if last else 'exit ' + rc)
    return out, (re.sub(r'\s+', ' ', why).strip()[:110] if failed else None)

rows, totals = [], {}
for f in programs:
    n = name_of(f)
    code = src[f]
    deriv = re.search(r'@[A-Za-z_(]', code) is not None
    hook = 'python::' in code
    library = not has_statements(code)
    seedr = seed_result(n)
    compiled = n in built
    cat, same, note = None, 'not compared' if seedr is None else '', ''
    if compiled and library:
        print('LIBRARY %s' % f)
        cat, comp, same, note = 'library', 'yes (library)', '-', 'no top-level statements: a module with no `main`'
    elif compiled:
        comp = 'yes'
        d = os.path.join(work, os.path.dirname(f))
        try:
            p = subprocess.run([built[n]], cwd=d, capture_output=True, timeout=300)
            rc, out, err = p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')
        except subprocess.TimeoutExpired:
            rc, out, err = 'timeout', '', ''
        open(os.path.join(work, 'out', n + '.out'), 'w').write(out)
        open(os.path.join(work, 'out', n + '.err'), 'w').write(err)
        if rc != 0:
            last = (err.strip().splitlines() or [''])[-1]
            print('RUN-ERROR %s: exit %s: %s' % (f, rc, last))
            note = 'run error: ' + last[:110]
            if seedr and seedr[1]:
                cat, same, note = 'seed-fails', 'seed fails too', note + '; seed: ' + seedr[1]
            else:
                cat, same = 'other', 'no'
        elif seedr is None:
            print('OK %s' % f)
            cat = 'not-compared'
        else:
            k = compare(out, seedr[0])
            if seedr[1] and k != 'same':
                cat, same, note = 'seed-fails', 'seed fails', 'seed: ' + seedr[1]
            elif k == 'same':
                print('SAME %s' % f); cat, same = 'same', 'yes'
            elif k == 'digits':
                print('DIGITS %s' % f); cat, same = 'digits', 'float digits only'
                note = first_diff(out, seedr[0])
            elif k == 'escapes':
                print('DIFF %s' % f); cat, same = 'deliberate: string escapes are processed', 'no (deliberate)'
                note = 'the seed prints `\\n` in strings literally'
            else:
                print('DIFF %s' % f); cat, same, note = 'other', 'no', first_diff(out, seedr[0], True)
                if f in CHECKED:
                    cat, same, note = 'seed-wrong', 'no (the seed is wrong)', CHECKED[f] + '; ' + note
    else:
        comp = 'no'
        err = first_error.get(n, '(no diagnostic)')
        print('COMPILE-ERROR %s: %s' % (f, err.splitlines()[0]))
        note = err.splitlines()[0][:140]
        rule = next((r for p, r in RULES if re.search(p, err, re.S)), None)
        if hook: cat = 'python'
        elif deriv: cat = 'derivatives'
        elif seedr and seedr[1]:
            cat, note = 'seed-fails', ('rule: %s; ' % rule if rule else '') + note + '; seed: ' + seedr[1]
        elif rule: cat, note = 'deliberate: ' + rule, 'rule: ' + rule + '; ' + note
        elif library: cat = 'other'; note += ' (library)'
        else: cat = 'other'
        if same == '': same = {'python': 'calls `python::`', 'derivatives': 'needs derivatives',
                               'seed-fails': 'seed fails too'}.get(cat, 'no (deliberate)' if cat.startswith('deliberate') else 'no')
    totals[cat] = totals.get(cat, 0) + 1
    rows.append((f[len('examples/'):], comp, same, note.replace('|', '\\|')))

with open(os.path.join(work, 'seed-examples.md'), 'w', encoding='utf-8') as out:
    out.write('| example | compiles | same output as the seed | note |\n|---|---|---|---|\n')
    for r in rows:
        out.write('| `%s` | %s | %s | %s |\n' % r)
    order = ['same', 'digits', 'library', 'deliberate', 'derivatives', 'python', 'seed-fails', 'seed-wrong',
             'not-compared', 'other']
    label = {'same': 'same output', 'digits': 'different only in printed float digits',
             'library': 'libraries that compile (no `main`)', 'derivatives': 'need derivatives (`@`)',
             'python': 'call `python::` hooks', 'seed-fails': 'fail in the seed too (missing data, seed errors)',
             'not-compared': 'run, not compared', 'seed-wrong': 'differ where the seed is wrong (checked by hand)', 'other': 'other failures'}
    parts = []
    for k in order:
        if k == 'deliberate':
            ds = sorted((c, v) for c, v in totals.items() if c.startswith('deliberate'))
            if ds:
                parts.append('deliberate differences: %d (%s)' % (sum(v for _, v in ds),
                             ', '.join('%s: %d' % (c[len('deliberate: '):], v) for c, v in ds)))
        elif totals.get(k):
            parts.append('%s: %d' % (label[k], totals[k]))
    out.write('\n**Totals** (%d programs): %s.\n' % (len(programs), '; '.join(parts)))
PY

python3 "$work/report.py" wrappers "$work" "$seed" "${PY_OUT:-}"
# Wrappers of examples that no longer exist.
for b in "$work"/src/bin/*.rs; do
    n=$(basename "$b" .rs)
    [ -n "$(cd "$work" && find examples -name '*.ein' | sed 's/^examples\///; s/\.ein$//; s/[^A-Za-z0-9]/_/g' | grep -x "$n")" ] || rm -f "$b"
done
# Which binaries compiled comes from this build's messages, so a binary
# left from an earlier run never stands for one that fails now.
(cd "$work" && cargo build --bins --keep-going --message-format json > build.json 2> build.log)
python3 "$work/report.py" report "$work" "$seed" "${PY_OUT:-}"
echo "table: $work/seed-examples.md"
