#!/usr/bin/env python3
"""Property test of the heuristics: `= auto` never yields a schedule the checker refuses.

Generates random fusions in the shapes of the project's other generators (sim_suite.py):
pointwise (with broadcasts, a second input, a transposed input or output), inner and outer
reductions (some followed by pointwise operations on the row's result: a cast, `* 2.0`,
`+ 1`, `i32(argmax(...))`), RMSNorm (+ residual add, in place; over [B, T, H] too),
LayerNorm and Softmax, some with their reduction also an output, in f32/bf16/f16 mixes,
over static and runtime dimensions; each gets `schedule f = auto;` or
`= auto(kind) { knobs }` with random knobs (some out of range), sometimes behind a user's
`when` guard next to a guarded schedule of the user's.
For each case one of these must hold:

  refused   `--emit=check` exits 1 with only the diagnostics that refuse an auto block
            (a knob, a kind), every one located in the user's file, on the lines of the
            `= auto` declaration (never in a buffer the user cannot see);
  declined  `--emit=check` passes and `--emit=schedule` reports needs-explicit-schedule at
            the `= auto` declaration (no heuristic for the fusion's shape);
  passes    `--emit=check` passes, `--emit=schedule` prints a file without `= auto` that
            itself checks (and prints back the same), and `--simulate` at small sizes
            matches the float64 reference.

The seed is fixed, so a failure reproduces; each failure prints the .fsl it ran. 300
fusions take 10 to 25 seconds on two cores. AUTO_PROPERTY_SEED=N tries another seed,
AUTO_PROPERTY_SHOW=N prints up to N failures (10).

usage: auto_property.py FSLC [COUNT]
"""
import concurrent.futures
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import zlib

SEED = 20261130
TIME_LIMIT_S = 30
# What may refuse an `= auto` block: its knobs and its kind. A rule of the checker or the
# lowering (vectorize-*, too-many-threads, when-overlap, lowering-unsupported...) means the
# heuristic chose a schedule it must not print.
REFUSALS = {"auto-knob-unsupported", "knob-type", "unknown-knob", "unknown-auto-kind",
            "duplicate-directive"}
TYPES = ["bf16", "f16", "f32"]
HIDDEN = [1, 7, 32, 96, 128, 1000, 1024, 4096, 20000]
KNOBS = {  # mostly values some heuristic can honour, some out of range
    "vector_width": lambda rng: rng.choice([1, 2, 4, 8, 8, 16, 3, 32]),
    "unroll": lambda rng: rng.choice([1, 2, 2, 4, 8, 3, 64, 100000000000]),
    "persistent_batch": lambda rng: rng.choice([1, 2, 2, 3, 4, 4, 8, 100]),
    "rows_per_block": lambda rng: rng.choice([1, 2, 2, 3, 4, 4, 8, 33, 4611686018427387904]),
    "static_bdimx": lambda rng: rng.choice(["true", "false"]),
    "compute_with": lambda rng: rng.choice(["true", "false"]),
}
# The knobs each heuristic reads (docs/schedules.md, Knobs).
KIND_KNOBS = {
    "pointwise": ["vector_width", "unroll"],
    "reduction": ["vector_width"],
    "inner_persistent": ["vector_width", "static_bdimx", "compute_with", "persistent_batch",
                         "rows_per_block"],
}
# The heuristic each shape is for.
SHAPE_KIND = {"pointwise": "pointwise", "pointwise_1d": "pointwise", "reduction": "reduction",
              "outer": "reduction"}


def cast(dtype, expr):
    return expr if dtype == "f32" else f"{dtype}({expr})"


class Fusion:
    """A fusion's text: parameters, outputs, body; `rows` says whether T is a row."""

    def __init__(self, rng):
        self.rng = rng
        self.static = {}  # static dimension -> value
        self.params, self.outputs, self.body = [], [], []
        self.rows = True  # the fusion has a T dimension the guards can name

    def dtype(self):
        return self.rng.choice(TYPES)

    def text(self):
        statics = ", ".join(f"{d} = {v}" for d, v in self.static.items())
        head = f"fusion f<{statics}>" if statics else "fusion f"
        body = "".join(f"    {line}\n" for line in self.body)
        return (f"{head}({', '.join(self.params)}) -> ({', '.join(self.outputs)}) {{\n"
                f"{body}}}\n")


def make_fusion(rng):
    fusion = Fusion(rng)
    if rng.random() < 0.75:
        fusion.static["H"] = rng.choice(HIDDEN)
    if rng.random() < 0.15:
        fusion.static["T"] = rng.choice([1, 3, 5])
    shape = rng.choice(["pointwise", "pointwise", "pointwise_1d", "reduction", "outer",
                        "rms_norm", "rms_norm_add", "layer_norm", "softmax", "softmax",
                        "rms_norm_3d"])
    p, o, b = fusion.params, fusion.outputs, fusion.body
    x = fusion.dtype()
    p.append(f"x: {x}[T, H]")
    if shape == "rms_norm_3d":
        # [B, T, H] rows: the heuristics handle one or two dimensions for now.
        p[0] = f"x: {x}[B, T, H]"
        y = fusion.dtype()
        o.append(f"y: {y}[B, T, H]")
        b.append("let h = f32(x);")
        b.append(f"y = {cast(y, 'h * rsqrt(mean(h * h, over H) + 1e-6)')};")
        fusion.static.pop("T", None)
    elif shape == "pointwise_1d":
        fusion.rows = False
        fusion.static.pop("T", None)
        p[0] = f"x: {x}[H]"
        y = fusion.dtype()
        o.append(f"y: {y}[H]")
        b.append(f"y = {cast(y, 'exp(f32(x)) * 0.5')};")
    elif shape == "pointwise":
        value = "f32(x)"
        if rng.random() < 0.6:
            p.append(f"w: {fusion.dtype()}[H]")
            value += " * f32(w)"
        if rng.random() < 0.4:
            p.append(f"z: {fusion.dtype()}[T, H]")
            value += " + f32(z)"
        if rng.random() < 0.15:  # an input stored the other way round
            p.append(f"u: {fusion.dtype()}[H, T]")
            value += " - f32(u)"
        b.append(f"let v = {value} + 1.0;")
        y = fusion.dtype()
        o.append(f"y: {y}[T, H]")
        b.append(f"y = {cast(y, 'v')};")
        if rng.random() < 0.4:
            yt = fusion.dtype()
            o.append(f"yt: {yt}[H, T]")
            b.append(f"yt = {cast(yt, 'v * 2.0')};")
    elif shape == "reduction":
        op = rng.choice(["sum", "mean", "max"])
        s = fusion.dtype()
        o.append(f"s: {s}[T]")
        b.append(f"let r = {op}(f32(x), over H);")
        b.append(f"s = {cast(s, 'r')};")
        # An index next to it: a (value, index) pair reduction. Its own generator, seeded
        # from this fusion's, leaves the other fusions of the seed as they were.
        index_rng = random.Random(zlib.crc32("\n".join(p + o + b).encode()))
        # Pointwise operations on the row's result (a row reduction all the same), from
        # a generator of their own, so the other draws stay as they were.
        post_rng = random.Random(zlib.crc32(("post\n" + "\n".join(p + o + b)).encode()))
        post = post_rng.choice(["r", "r", "r * 2.0", "r + 1", "r * 2.0 + 1"])
        b[-1] = f"s = {cast(s, post)};"
        if index_rng.random() < 0.4:
            arg = index_rng.choice(['argmax', 'argmin'])
            # Its index as i32 (docs/language.md's idiom), at times the first output, so
            # the layout is read from the cast.
            if post_rng.random() < 0.75:
                o.insert(post_rng.choice([0, len(o)]), "at: i32[T]")
                b.append(f"at = i32({arg}(x, over H));")
            else:
                o.append("at: i64[T]")
                b.append(f"at = {arg}(x, over H);")
        if rng.random() < 0.3:
            yt = fusion.dtype()
            o.append(f"yt: {yt}[H, T]")
            b.append(f"yt = {cast(yt, 'f32(x) * 3.0')};")
    elif shape == "outer":
        s = fusion.dtype()
        o.append(f"s: {s}[H]")
        b.append(f"s = {cast(s, 'sum(f32(x), over T)')};")
    else:
        y = fusion.dtype()
        if shape == "rms_norm_add":
            p.append(f"residual: inout {fusion.dtype()}[T, H]")
        if shape in ("rms_norm", "rms_norm_add", "layer_norm"):
            p.append(f"w: {fusion.dtype()}[H]")
        if shape == "rms_norm_add":
            b.append("let h = f32(x) + f32(residual);")
            b.append(f"residual = {cast(residual_type(p), 'h')};")
        else:
            b.append("let h = f32(x);")
        if shape in ("rms_norm", "rms_norm_add"):
            b.append("let r = mean(h * h, over H);")
            b.append(f"y = {cast(y, 'h * rsqrt(r + 1e-6) * f32(w)')};")
        elif shape == "layer_norm":
            b.append("let mu = mean(h, over H);")
            b.append("let d = h - mu;")
            b.append("let r = mean(d * d, over H);")
            b.append(f"y = {cast(y, 'd * rsqrt(r + 1e-5) * f32(w)')};")
        else:
            b.append("let e = exp(h - max(h, over H));")
            b.append("let r = sum(e, over H);")
            b.append(f"y = {cast(y, 'e / r')};")
        o.append(f"y: {y}[T, H]")
        # The reduction as an output too (f32 or not), or a transposed copy of the row.
        if rng.random() < 0.3:
            s = fusion.dtype()
            o.append(f"s: {s}[T]")
            b.append(f"s = {cast(s, 'r')};")
        if rng.random() < 0.2:
            yt = fusion.dtype()
            o.append(f"yt: {yt}[H, T]")
            b.append(f"yt = {cast(yt, 'h')};")
    return fusion, shape


def residual_type(params):
    return next(p.split()[2].split("[")[0] for p in params if p.startswith("residual:"))


def auto_block(rng, shape, guard):
    """`schedule f [guard] = auto...`, as lines: mostly the heuristic for the shape with
    some of its knobs, sometimes another one, any knob, or a kind that does not exist."""
    head = f"schedule f{guard} = auto"
    roll = rng.random()
    if roll < 0.25:
        return [head + ";"]
    if roll < 0.8:
        kind = SHAPE_KIND.get(shape, "inner_persistent")
        own = KIND_KNOBS[kind]
        names = rng.sample(own, min(len(own), rng.choice([0, 1, 1, 2, 3])))
    else:
        kind = rng.choice(["pointwise", "reduction", "inner_persistent", "matmul", "fastest", ""])
        names = rng.sample(sorted(KNOBS), rng.choice([0, 1, 2]))
    lines = [head + (f"({kind})" if kind else "") + (" {" if names else ";")]
    for name in names:
        lines.append(f"    {name} = {KNOBS[name](rng)};")
    if names:
        lines.append("}")
    return lines


def make_case(rng, index):
    fusion, shape = make_fusion(rng)
    text = fusion.text() + "\n"
    schedules = []
    guarded = fusion.rows and "T" not in fusion.static and rng.random() < 0.3
    bound = rng.choice([2, 4, 64, 200])
    if guarded:
        # A user's guarded schedule next to the auto one: the heuristic's own variants
        # must not overlap it.
        other = rng.choice(["auto", "auto", "hand"])
        if other == "hand" and shape in ("outer", "pointwise_1d"):
            other = "auto"
        guard = f" when T < {bound}"
        if other == "hand":
            schedules.append([f"schedule f{guard} {{", "    parallelize T -> BIDx;", "}"])
        else:
            schedules.append(auto_block(rng, shape, guard))
        rest = rng.choice(["", f" when T >= {bound}"])
        schedules.append(auto_block(rng, shape, rest))
    else:
        schedules.append(auto_block(rng, shape, ""))
    # The lines of each `= auto` declaration, where its refusals must be.
    auto_lines = set()
    line = text.count("\n") + 1
    for block in schedules:
        if "= auto" in block[0]:
            auto_lines.update(range(line, line + len(block)))
        line += len(block)
        text += "\n".join(block) + "\n"
    # Every dimension's size, the static ones as declared.
    sizes = dict(fusion.static)
    if "H" not in sizes:
        sizes["H"] = rng.choice([1, 7, 96, 1000])
    if "T" not in sizes and fusion.rows:
        # Mostly few rows; at times more than the SMs, past the heuristics' own
        # `when T < sm_count` variant (a second or so when the rows are long).
        sizes["T"] = rng.choice([1, 2, 3, 7] + ([bound - 1, bound] if guarded else []) +
                                ([133] if sizes["H"] <= 1024 or rng.random() < 0.3 else []))
    if shape == "rms_norm_3d":
        sizes["B"] = 2
    return index, shape, text, sizes, auto_lines


def fslc_run(fslc, args, path):
    try:
        return subprocess.run([fslc, "--diagnostics-color=never", *args, path],
                              capture_output=True, text=True, timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        # A schedule that runs for ever is as wrong as one that does not check.
        return subprocess.CompletedProcess(args, -1, "", f"no answer within {TIME_LIMIT_S} s")


def diagnostics_of(result):
    try:
        return json.loads(result.stderr)["diagnostics"] if result.stderr.strip() else []
    except (ValueError, KeyError):
        return None


def located(diagnostics, path, lines):
    """Why some diagnostic is not in the user's file on the given lines, or None."""
    for diagnostic in diagnostics:
        where = diagnostic.get("file")
        if where != path or "range" not in diagnostic:
            return f"[{diagnostic['id']}] located in {where!r}, not in {path}"
        line = diagnostic["range"]["start"]["line"]
        if line not in lines:
            return f"[{diagnostic['id']}] at line {line}, not on the '= auto' lines {sorted(lines)}"
    return None


def check_case(fslc, workdir, case):
    index, shape, text, sizes, auto_lines = case
    path = os.path.join(workdir, f"case{index}.fsl")
    with open(path, "w") as handle:
        handle.write(text)

    def fail(why, result=None):
        output = f"\n{result.stdout}{result.stderr}" if result is not None else ""
        return "fail", f"case {index} ({shape}): {why}\n{text}{output}"

    json_args = ["--diagnostics-format=json"]
    check = fslc_run(fslc, ["--emit=check", *json_args], path)
    diagnostics = diagnostics_of(check)
    if diagnostics is None or check.returncode not in (0, 1):
        return fail(f"--emit=check exited {check.returncode}", check)
    if check.returncode == 1:
        ids = {d["id"] for d in diagnostics}
        if not diagnostics or not ids <= REFUSALS:
            return fail(f"--emit=check refused with {sorted(ids - REFUSALS) or 'nothing'}", check)
        where = located(diagnostics, path, auto_lines)
        if where:
            return fail(where, check)
        # The same refusal in text: nothing points into a buffer the user never sees.
        text_check = fslc_run(fslc, ["--emit=check"], path)
        if text_check.returncode != 1 or "<auto" in text_check.stderr \
                or not text_check.stderr.startswith(path + ":"):
            return fail("the text diagnostics are not located in the file", text_check)
        return "refused", ""
    if diagnostics:
        return fail("--emit=check passed with diagnostics", check)

    printed = fslc_run(fslc, ["--emit=schedule", *json_args], path)
    diagnostics = diagnostics_of(printed)
    if diagnostics is None:
        return fail("--emit=schedule wrote no JSON", printed)
    if printed.returncode == 1:
        ids = {d["id"] for d in diagnostics}
        where = located(diagnostics, path, auto_lines)
        if ids != {"needs-explicit-schedule"} or where:
            return fail(f"--emit=schedule refused: {sorted(ids)} {where or ''}", printed)
        return "declined", ""
    if printed.returncode != 0 or diagnostics:
        return fail(f"--emit=schedule exited {printed.returncode}", printed)
    if "= auto" in printed.stdout:
        return fail("--emit=schedule printed an '= auto' back", printed)
    again_path = os.path.join(workdir, f"case{index}.printed.fsl")
    with open(again_path, "w") as handle:
        handle.write(printed.stdout)
    again = fslc_run(fslc, ["--emit=schedule"], again_path)
    if again.returncode != 0 or again.stderr:
        return fail("the printed schedule does not check", again)
    if again.stdout != printed.stdout:
        return fail("the printed schedule prints back differently:\n" + printed.stdout, again)

    argument = ",".join(f"{d}={v}" for d, v in sizes.items())
    simulate = fslc_run(fslc, ["--simulate", argument], path)
    if simulate.returncode != 0 or not re.search(r"matches the float64 reference", simulate.stdout) \
            or "differs" in simulate.stdout:
        return fail(f"--simulate {argument} did not match", simulate)
    return "pass", ""


def main():
    fslc = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rng = random.Random(int(os.environ.get("AUTO_PROPERTY_SEED", SEED)))
    cases = [make_case(rng, index) for index in range(count)]
    tally = {"pass": 0, "refused": 0, "declined": 0, "fail": 0}
    with tempfile.TemporaryDirectory() as workdir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for outcome, detail in pool.map(lambda c: check_case(fslc, workdir, c), cases):
                tally[outcome] += 1
                if outcome == "fail" and tally["fail"] <= int(os.environ.get("AUTO_PROPERTY_SHOW", "10")):
                    print("FAIL:", detail)
    print(f"auto property: {tally['pass']} checked, printed and simulated; {tally['refused']} "
          f"refused at a knob or kind; {tally['declined']} declined; {tally['fail']} failed "
          f"(of {count})")
    # Most cases must run, or the test tests little.
    if tally["pass"] < count // 3:
        print(f"too few cases ran: {tally['pass']} of {count}")
        return 1
    return 1 if tally["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
