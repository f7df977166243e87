"""The timing runner of `fslc tune` and the recorder of its winners (docs/tuning.md).

`fslc tune FILE --fusion NAME --shapes ... -o DIR` writes the candidates of a fusion's
schedule and DIR/manifest.json. On a machine with a GPU,

    python -m fslc.tune run DIR/manifest.json --reference mymodule:reference -o results.json

compiles each candidate through the package's JIT (`fslc.load_text`), checks its outputs
against a float64 PyTorch reference (a mismatch, a compile or a launch failure is recorded
and never chosen), and times it with CUDA graphs over rotating inputs larger than L2 (the
median of several rounds, within a time budget a shape). Then

    python -m fslc.tune record results.json -o tuned.fsl

writes the winners into a tuning database (a new file, or an update of an existing one):
per shape the fastest candidate, unless it is within 2 % of the heuristics' choice, which
then stays (the database records only changes worth their maintenance). With `fslc tune
--pairs K` the runner also times the pairs of the K fastest single knobs of each shape;
with `fslc tune --variants H` the candidates are launch-time variants `when H == N` (each
planned and lowered with H static at N, so every knob of the static size is a candidate)
and `record` writes one entry an H (the geometric mean over the shapes of that H). And

    python -m fslc.tune compare first.json second.json

says per shape whether two runs agree on the winner or on a tie within 2 % (exit 1 if not).

The choice of winners and the database text are plain Python (no torch, no GPU); only
`run` imports torch and the compiled library.
"""

import argparse
import datetime
import importlib
import json
import math
import os
import re
import statistics
import sys
import time

# A candidate is chosen over the heuristics' only when it is faster by more than this.
TIE_FRACTION = 0.02

# Relative tolerances of the check against the float64 reference, by output type: a few
# roundings of the type, and of f32 accumulation over long sums; the absolute tolerance
# is this times the root mean square of the reference (partial sums are that large).
RTOL = {"bf16": 3e-2, "f16": 4e-3, "f32": 1e-4, "f64": 1e-10}

STATUS_OK = "ok"


def shape_key(shape):
    """`K=5120,M=4096,N=14336`: a shape as one string, its names sorted."""
    return ",".join("%s=%d" % (name, shape[name]) for name in sorted(shape))


# --- Winners ---------------------------------------------------------------------------


def choose_winners(results, tie=TIE_FRACTION):
    """{shape key: the winning result, or None when every candidate failed}.

    Only results with status "ok" and a time count, and of those, where the runner
    confirmed two (confirm_ms), only those two. The fastest wins, unless the heuristics'
    candidate (knobs {}) is within `tie` of it: then the heuristics' stays.
    """
    by_shape = {}
    for result in results:
        by_shape.setdefault(shape_key(result["shape"]), []).append(result)
    winners = {}
    for key, candidates in by_shape.items():
        timed = [r for r in candidates if r.get("status") == STATUS_OK and r.get("time_ms") is not None]
        # The runner's confirmation round re-timed the heuristics' candidate and the fastest
        # other side by side: those two decide (a screening time of a third is not compared
        # with them).
        confirmed = [r for r in timed if r.get("confirm_ms")]
        if confirmed:
            timed = confirmed
        if not timed:
            winners[key] = None
            continue
        best = min(timed, key=lambda r: r["time_ms"])
        heuristics = next((r for r in timed if r.get("heuristics")), None)
        if heuristics is not None and best["time_ms"] >= heuristics["time_ms"] * (1 - tie):
            best = heuristics
        winners[key] = best
    return winners


# --- Repeatability -----------------------------------------------------------------------


def _knob_key(knobs):
    return json.dumps(knobs, sort_keys=True)


def compare_runs(first, second, tie=TIE_FRACTION):
    """[(shape key, agree, text)] for two results documents of the same candidates: per
    shape, the runs agree when they choose the same knobs, or when each run times the
    other's winner within `tie` of its own (a tie, which the measurement cannot split)."""
    def timed_results(document):
        by_shape = {}
        for r in document["results"]:
            if r.get("status") == STATUS_OK and r.get("time_ms") is not None:
                by_shape.setdefault(shape_key(r["shape"]), {})[_knob_key(r["knobs"])] = r
        return by_shape

    def gap(other, own):
        # Like with like: where the confirmation round did not time both, their screening
        # times. A confirmed time is taken under the round's sustained load and a screening
        # time after the GPU idled through a compilation; on an H100 the second ran 10-14 %
        # faster, so a winner's confirmed time against a screened one made any other
        # candidate look 12 % faster than the winner.
        if other.get("confirm_ms") and own.get("confirm_ms"):
            return other["time_ms"] / own["time_ms"] - 1
        return other.get("screen_ms", other["time_ms"]) / own.get("screen_ms", own["time_ms"]) - 1

    winners = [choose_winners(first["results"], tie), choose_winners(second["results"], tie)]
    timed = [timed_results(first), timed_results(second)]
    lines = []
    for key in sorted(set(winners[0]) | set(winners[1])):
        a, b = winners[0].get(key), winners[1].get(key)
        if a is None or b is None:
            lines.append((key, False, "no winner in %s" % ("the first run" if a is None else "the second run")))
            continue
        ka, kb = _knob_key(a["knobs"]), _knob_key(b["knobs"])
        if ka == kb:
            lines.append((key, True, "the same winner %s (%.4f and %.4f ms)" % (ka, a["time_ms"], b["time_ms"])))
            continue
        # Each run's time of the other run's winner, against its own winner's.
        gaps = []
        for run, own, other in ((0, a, kb), (1, b, ka)):
            other_result = timed[run].get(key, {}).get(other)
            gaps.append(None if other_result is None else gap(other_result, own))
        agree = all(g is not None and g <= tie for g in gaps)
        text = "winners %s (%.4f ms) and %s (%.4f ms); the other's winner %s" % (
            ka, a["time_ms"], kb, b["time_ms"],
            ", ".join("not timed" if g is None else "%+.1f %%" % (g * 100) for g in gaps))
        lines.append((key, agree, ("a tie: " if agree else "") + text))
    return lines


# --- The pairs round -------------------------------------------------------------------

STATUS_NOT_PAIRED = "not-paired"


def fastest_single_knobs(results, count):
    """The (knob, value) settings of the `count` fastest candidates of one shape that vary
    one knob alone and ran and matched: the knobs `fslc tune --pairs` combines."""
    singles = [r for r in results if r.get("status") == STATUS_OK and r.get("time_ms") is not None
               and len(r.get("knobs", {})) == 1 and not r.get("heuristics")]
    singles.sort(key=lambda r: r["time_ms"])
    return [next(iter(r["knobs"].items())) for r in singles[:count]]


def is_paired(candidate, selected):
    """Whether a second-round candidate combines only knob settings in `selected`."""
    return all((name, value) in selected for name, value in candidate["knobs"].items())


def timing_order(candidates):
    """A shape's candidates as the runner times them: the heuristics' first (the tie rule
    needs its time), then the first round, then the pairs (chosen from the first round);
    within a round, matrix products' candidates by the cost model's estimate (`fslc tune`
    writes `estimate_us`), so that a budget that runs out skips those estimated slowest,
    and otherwise in the manifest's order."""
    return sorted(candidates, key=lambda c: (not c.get("heuristics"), c.get("round", 1),
                                             c.get("estimate_us", 0), c["id"]))


# --- The database text -----------------------------------------------------------------


def knob_value_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def guard_text(shape):
    return " && ".join("%s == %d" % (name, shape[name]) for name in sorted(shape))


def machine_text(machine):
    """The parts of a measurement comment that say where and when: the GPU and its driver,
    the date."""
    gpu = machine.get("gpu", "unknown GPU")
    if machine.get("driver"):
        gpu += ", driver %s" % machine["driver"]
    return [gpu] + ([machine["date"]] if machine.get("date") else [])


def measurement_text(winner, heuristics, peers, machine):
    """The comment that records a winner's measurement."""
    if winner.get("confirm_ms"):
        parts = ["measured: %.4f ms (median of %d timings alternated with the heuristics', %d rounds each)"
                 % (winner["time_ms"], len(winner["confirm_ms"]), len(winner.get("rounds_ms", [])) or 1)]
    else:
        parts = ["measured: %.4f ms (median of %d rounds)" % (winner["time_ms"], len(winner.get("rounds_ms", [])) or 1)]
    if heuristics is not None and heuristics is not winner and heuristics.get("time_ms"):
        change = (winner["time_ms"] / heuristics["time_ms"] - 1) * 100
        parts.append("heuristics %.4f ms (%+.1f %%)" % (heuristics["time_ms"], change))
    elif winner.get("heuristics"):
        parts.append("the heuristics' choice")
    for name in sorted(peers or {}):
        parts.append("peer %s %.4f ms" % (name, peers[name]))
    parts += machine_text(machine)
    return "; ".join(parts)


def entry_text(fusion, kind, target, shape, knobs, measurement):
    """One database entry: the target line, the measurement, and `= auto(kind) { knobs }`
    under a guard of the shape's exact sizes."""
    # In canonical form (fslc --emit=format): one knob a line.
    knob_text = "".join("    %s = %s;\n" % (name, knob_value_text(knobs[name])) for name in sorted(knobs))
    body = " {\n%s}" % knob_text if knob_text else ";"
    return "// target: %s\n// %s\nschedule %s when %s = auto(%s)%s\n" % (
        target, measurement, fusion, guard_text(shape), kind, body)


# The guard ends at `= auto` or `{` (its own `==` does not end it).
_SCHEDULE = re.compile(r"^\s*schedule\s+(\w+)(?:\s+when\s+(.*?))?\s*(?:=\s*auto\b|\{)")
_TARGET = re.compile(r"^\s*//\s*target:\s*(\S+)")


def entry_key(chunk):
    """(fusion, target, guard without spaces) of an entry's text, or None for text that is
    no entry (a file comment)."""
    fusion = target = guard = None
    for line in chunk.splitlines():
        match = _TARGET.match(line)
        if match and target is None:
            target = match.group(1)
        match = _SCHEDULE.match(line)
        if match and fusion is None:
            fusion, guard = match.group(1), re.sub(r"\s+", "", match.group(2) or "")
    if fusion is None:
        return None
    return (fusion, target, guard)


def update_database(text, entries):
    """The database `text` with `entries` (entry_text's) in it: an entry replaces the one
    of the same fusion, target and guard, the others are appended; the rest is kept.
    Entries are separated by blank lines (fslc tune writes them so)."""
    chunks = [c for c in re.split(r"\n\s*\n", text.strip("\n")) if c.strip()] if text.strip() else []
    positions = {}
    for index, chunk in enumerate(chunks):
        key = entry_key(chunk)
        if key is not None:
            positions[key] = index
    for entry in entries:
        key = entry_key(entry)
        chunk = entry.rstrip("\n")
        if key in positions:
            chunks[positions[key]] = chunk
        else:
            positions[key] = len(chunks)
            chunks.append(chunk)
    return "\n\n".join(chunks) + "\n"


# --- Launch-time variants (fslc tune --variants) ------------------------------------------

HEURISTICS_KEY = "heuristics"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def choose_variant_winners(results, duplicates, dims, tie=TIE_FRACTION):
    """{guard key: winner, or None} for a run of launch-time variants (`fslc tune
    --variants`): the shapes that share the sizes of `dims` (H = 4096 at every T) are one
    variant, `when H == 4096`. A candidate's time there is the geometric mean over those
    shapes, counted only when it ran and matched at all of them (a duplicate takes the time
    of the candidate it is the same schedule as). The fastest wins, unless the heuristics'
    own variants (the file without an entry) are within `tie` of it. A winner is
    {"guard", "knobs", "heuristics", "time_ms", "heuristics_ms", "shapes", "rounds"}."""
    by_id = {(shape_key(r["shape"]), r["id"]): r for r in results}
    groups = {}

    def group_of(shape):
        guard = {d: shape[d] for d in dims}
        return groups.setdefault(shape_key(guard), {"guard": guard, "shapes": set(), "times": {}, "knobs": {}})

    def add(group, shape, key, knobs, result):
        group["times"].setdefault(key, {})[shape_key(shape)] = result["time_ms"]
        group["knobs"][key] = knobs

    for r in results:
        group = group_of(r["shape"])
        group["shapes"].add(shape_key(r["shape"]))
        if r.get("status") == STATUS_OK and r.get("time_ms") is not None:
            add(group, r["shape"], HEURISTICS_KEY if r.get("heuristics") else _knob_key(r["knobs"]), r["knobs"], r)
    for d in duplicates or []:
        same = by_id.get((shape_key(d["shape"]), d["same_as"]))
        if same is not None and same.get("status") == STATUS_OK and same.get("time_ms") is not None:
            add(group_of(d["shape"]), d["shape"], _knob_key(d["knobs"]), d["knobs"], same)
    rounds = max((len(r.get("rounds_ms", [])) for r in results), default=0) or 1
    winners = {}
    for key, group in groups.items():
        complete = {c: geomean(list(t.values())) for c, t in group["times"].items() if set(t) == group["shapes"]}
        if not complete:
            winners[key] = None
            continue
        best = min(complete, key=lambda c: (complete[c], c != HEURISTICS_KEY))
        baseline = complete.get(HEURISTICS_KEY)
        if baseline is not None and complete[best] >= baseline * (1 - tie):
            best = HEURISTICS_KEY
        winners[key] = {"guard": group["guard"], "knobs": group["knobs"][best],
                        "heuristics": best == HEURISTICS_KEY, "time_ms": complete[best],
                        "heuristics_ms": baseline, "shapes": sorted(group["shapes"]), "rounds": rounds}
    return winners


def variant_measurement_text(winner, dims, peers, machine):
    """The comment of a variant's entry: geometric means over the variant's shapes."""
    others = [",".join(part for part in key.split(",") if part.split("=")[0] not in dims)
              for key in winner["shapes"]]
    over = "%d shape%s" % (len(others), "" if len(others) == 1 else "s")
    if any(others):
        over += ": " + ", ".join(others)
    parts = ["measured: %.4f ms (geomean of %s; median of %d rounds each)" % (winner["time_ms"], over, winner["rounds"])]
    if winner.get("heuristics_ms"):
        parts.append("heuristics' variants %.4f ms (%+.1f %%)"
                     % (winner["heuristics_ms"], (winner["time_ms"] / winner["heuristics_ms"] - 1) * 100))
    names = sorted({name for key in winner["shapes"] for name in (peers or {}).get(key, {})})
    for name in names:
        times = [peers.get(key, {}).get(name) for key in winner["shapes"]]
        if all(t is not None for t in times):
            parts.append("peer %s %.4f ms" % (name, geomean(times)))
    parts += machine_text(machine)
    return "; ".join(parts)


def record_variants(results_document, database_text):
    """The database with an entry `when H == N` for each variant whose winner is not the
    heuristics' own variants (there the database needs no entry: they apply without one)."""
    dims = results_document["variants"]
    winners = choose_variant_winners(results_document["results"], results_document.get("duplicates"), dims)
    entries = []
    for key in sorted(winners):
        winner = winners[key]
        if winner is None or winner["heuristics"]:
            continue
        measurement = variant_measurement_text(winner, dims, results_document.get("peers", {}),
                                               results_document.get("machine", {}))
        entries.append(entry_text(results_document["fusion"], results_document["kind"],
                                  results_document["target"], winner["guard"], winner["knobs"], measurement))
    return update_database(database_text, entries) if entries else database_text


def record(results_document, database_text):
    """The database text with the winners of a results document (`run`'s output)."""
    if results_document.get("variants"):
        return record_variants(results_document, database_text)
    results = results_document["results"]
    winners = choose_winners(results)
    entries = []
    for key in sorted(winners):
        winner = winners[key]
        if winner is None:
            continue
        heuristics = next((r for r in results if shape_key(r["shape"]) == key and r.get("heuristics")
                           and r.get("status") == STATUS_OK), None)
        peers = results_document.get("peers", {}).get(key, {})
        measurement = measurement_text(winner, heuristics, peers, results_document.get("machine", {}))
        entries.append(entry_text(results_document["fusion"], results_document["kind"],
                                  results_document["target"], winner["shape"], winner["knobs"],
                                  measurement))
    return update_database(database_text, entries)


# --- The runner (needs torch and a GPU) ------------------------------------------------


# A `backward` clause's items: its fusions' names, and `grad_a = grad_b` items (an
# input's gradient the same tensor as another's), which name no fusion.
_PAIRING = re.compile(r"\bfusion\s+(\w+)\b[^{]*?\)\s*backward\s+([\w\s,=]+?)\s*\{")


def paired_fusions(text, fusion):
    """`fusion` and every fusion a `backward` pairing links to it, directly or through
    another (a forward, its backward fusions, their siblings): their shared dimensions
    must keep one size, or the compiler refuses the pairing (backward-type-mismatch)."""
    edges = {}
    for match in _PAIRING.finditer(text):
        forward = match.group(1)
        for backward in (item.strip() for item in match.group(2).split(",")):
            if backward and "=" not in backward:
                edges.setdefault(forward, set()).add(backward)
                edges.setdefault(backward, set()).add(forward)
    group, todo = {fusion}, [fusion]
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in group:
                group.add(other)
                todo.append(other)
    return group


def with_static_sizes(text, fusion, shape):
    """`text` with the static sizes of `fusion`'s declaration (`fusion f<H = 4096>`), and of
    the fusions paired with it by `backward` clauses, set to the shape's values; other
    fusions and dimensions the shape does not give keep their sizes. Such a fusion declared
    without static sizes (`fusion matmul(a: bf16[M, K], ...)`) gets the shape's values of
    the dimensions its signature names: its knobs are checked, when the program loads,
    against the heuristics' schedule at the shape, not at runtime sizes (a pipeline depth
    that fits the shape's small tiles is refused beside the large ones runtime sizes get)."""
    group = sorted(paired_fusions(text, fusion))
    names = "|".join(re.escape(name) for name in group)
    pattern = re.compile(r"(\bfusion\s+(?:%s)\s*<)([^>]*)(>)" % names)

    def sizes(match):
        def one(dim):
            name = dim.group(1)
            return "%s = %d" % (name, shape[name]) if name in shape else dim.group(0)

        return match.group(1) + re.sub(r"(\w+)\s*=\s*\d+", one, match.group(2)) + match.group(3)

    text = pattern.sub(sizes, text)
    bare = re.compile(r"(\bfusion\s+(?:%s))(\s*\()" % names)

    def declared(match):
        # The signature runs to the body's brace; its dimensions are the names in brackets.
        end = text.find("{", match.end())
        signature = text[match.end():end if end >= 0 else len(text)]
        dims = []
        for bracket in re.findall(r"\[([^\]]*)\]", signature):
            for dim in re.findall(r"[A-Za-z_]\w*", bracket):
                if dim in shape and dim not in dims:
                    dims.append(dim)
        if not dims:
            return match.group(0)
        return "%s<%s>%s" % (match.group(1), ", ".join("%s = %d" % (d, shape[d]) for d in dims),
                             match.group(2))

    return bare.sub(declared, text)


def _torch_dtype(torch, name):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
            "f64": torch.float64, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}[name]


def _size(signature, shape, dim):
    extent = signature.dims.get(dim)
    return extent if extent is not None else shape[dim]


def _make_inputs(torch, signature, shape, generator):
    """One set of the fusion's inputs (tensors by name; scalars take their defaults)."""
    tensors = {}
    for param in signature.tensors:
        if param.role == "out":
            continue
        sizes = [_size(signature, shape, dim) for dim in param.dims]
        dtype = _torch_dtype(torch, param.dtype)
        if dtype.is_floating_point:
            value = torch.randn(sizes, generator=generator, device="cuda", dtype=torch.float32).to(dtype)
        elif dtype == torch.bool:
            value = torch.randint(0, 2, sizes, generator=generator, device="cuda").bool()
        else:
            value = torch.randint(0, 16, sizes, generator=generator, device="cuda", dtype=dtype)
        tensors[param.name] = value
    return tensors


def _call(fusion, signature, tensors):
    args = [tensors[p.name] for p in signature.inputs if p.kind == "tensor"]
    outputs = fusion(*args)
    if outputs is None:
        outputs = ()
    elif not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)
    named = {p.name: out for p, out in zip(signature.outputs, outputs)}
    for param in signature.inout:
        named[param.name] = tensors[param.name]
    return named


def _mismatch(torch, signature, got, expected, rtol_override=None):
    """Why the outputs differ from the reference (None when they match)."""
    dtypes = {p.name: p.dtype for p in signature.tensors}
    for name, reference in expected.items():
        if name not in got:
            return "output %s missing" % name
        value = got[name].double()
        reference = reference.double()
        if value.shape != reference.shape:
            return "output %s: shape %s, expected %s" % (name, tuple(value.shape), tuple(reference.shape))
        rtol = rtol_override if rtol_override is not None else RTOL.get(dtypes.get(name), 1e-4)
        atol = rtol * float(reference.pow(2).mean().sqrt())
        error = (value - reference).abs()
        bad = error > atol + rtol * reference.abs()
        if bool(bad.any()) or bool(torch.isnan(value).any() != torch.isnan(reference).any()):
            return "output %s: %d of %d elements out of tolerance (max error %.3g, rtol %g)" % (
                name, int(bad.sum()), bad.numel(), float(error.max()), rtol)
    return None


def _time_graph(torch, launch, sets, rounds):
    """Median milliseconds of one call, from CUDA graphs replaying it over every set."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for tensors in sets:  # warm-up outside capture: the JIT compiles here
            launch(tensors)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    # The outputs stay referenced while the graph is captured: each call writes its own
    # buffers, as a model's calls do. Freed at once, every call's output would be the one
    # buffer the next call gets, which the L2 keeps (at T = 1024 that hid up to 1.9 µs of a
    # norm's writes on an H100).
    outputs = []
    with torch.cuda.graph(graph):
        for tensors in sets:
            outputs.append(launch(tensors))
    del outputs  # their memory stays the graph's, for its replays
    # Warm-up: 20 ms of replays (at most 200). A candidate is timed right after its
    # compilation, with the GPU idle meanwhile; without this the clocks and caches it finds
    # differ from candidate to candidate (the first of a shape was measured 5-12 % slow).
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    for _ in range(min(200, int(20.0 / max(start.elapsed_time(end), 1e-3)))):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / len(sets))
    return statistics.median(times), times


class ShapeBudget:
    """A shape's time budget (seconds), counted from the first candidate after the
    heuristics' one. The heuristics' candidate is always timed (the others are compared
    with it) and pays whatever the process does once: the CUDA context, the JIT's first
    compilation, PyTorch's first kernels. Counted from the shape's start, that one-time
    cost took the whole 19 s budget of the first shape on an H100, and none of its 25 other
    candidates ran."""

    def __init__(self, seconds, clock=time.monotonic):
        self.seconds, self.clock, self.started = seconds, clock, None

    def exhausted(self, candidate):
        """Whether `candidate` is skipped as over budget (never the heuristics' one)."""
        if candidate.get("heuristics"):
            return False
        if self.started is None:
            self.started = self.clock()
        return self.clock() - self.started > self.seconds


# The confirmation round: the heuristics' candidate and the fastest other one, timed again
# alternately with the peers this many times each (confirmation_order), decide the winner.
CONFIRM_TIMINGS = 4


def confirmation_order(count, timings=CONFIRM_TIMINGS):
    """The order of the confirmation round over `count` implementations (the heuristics'
    candidate, the fastest other one, then the peers): each timed `timings` times, the whole
    list forward then backward (A B P P B A A B P ...), so that a drift during the round (the
    clocks under sustained load) weighs on each alike, whatever its place in the list."""
    order = []
    for turn in range(timings):
        order += list(range(count)) if turn % 2 == 0 else list(reversed(range(count)))
    return order


def confirm(shape_results, timed, peers, time_one, key, log):
    """Times the heuristics' candidate and the fastest other candidate of a shape again,
    alternately with the peers (confirmation_order), and gives each the median of those
    timings as its time (the first timing stays as screen_ms): a winner is chosen from
    measurements taken side by side, not minutes apart, and the peers' times, measured
    among them, compare with theirs. `timed` maps a candidate's id to its call, `peers` a
    name to its call, `time_one(call)` gives the median milliseconds of one timing. Returns
    the peers' times (name -> ms), empty where nothing was confirmed."""
    ok = [r for r in shape_results if r.get("status") == STATUS_OK and r["id"] in timed]
    heuristics = next((r for r in ok if r["heuristics"]), None)
    others = sorted((r for r in ok if not r["heuristics"]), key=lambda r: r["time_ms"])
    if heuristics is None or not others:
        return {}
    pair = [heuristics, others[0]]
    names = list(peers)
    calls = [timed[r["id"]] for r in pair] + [peers[name] for name in names]
    medians = [[] for _ in calls]
    failed = set()  # peers that raised: left out of the rest of the round
    for index in confirmation_order(len(calls)):
        if index in failed:
            continue
        try:
            medians[index].append(time_one(calls[index]))
        except Exception as error:
            if index < 2:  # both keep their screening times; nothing is confirmed
                print("%s confirmation failed, the screening times stay: %s" % (key, error), file=log)
                return {}
            print("%s peer %s failed: %s" % (key, names[index - 2], error), file=log)
            failed.add(index)
    for result, times in zip(pair, medians):
        result["screen_ms"] = result["time_ms"]
        result["time_ms"] = statistics.median(times)
        result["confirm_ms"] = times
    print("%s confirmed: heuristics %.4f ms (screened %.4f), c%d %s %.4f ms (screened %.4f)"
          % (key, heuristics["time_ms"], heuristics["screen_ms"], others[0]["id"], others[0]["knobs"],
             others[0]["time_ms"], others[0]["screen_ms"]), file=log)
    return {name: statistics.median(times) for index, (name, times) in enumerate(zip(names, medians[2:]))
            if index + 2 not in failed}


def _load_callable(spec):
    module, _, name = spec.partition(":")
    if not name:
        raise SystemExit("expected MODULE:FUNCTION, not %r" % spec)
    return getattr(importlib.import_module(module), name)


def _input_sets(torch, signature, shape, l2_bytes, seed):
    """Enough input sets that one pass over them is twice L2: each call reads from DRAM."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    first = _make_inputs(torch, signature, shape, generator)
    set_bytes = sum(t.numel() * t.element_size() for t in first.values()) or 1
    count = max(1, min(64, math.ceil(2 * l2_bytes / set_bytes)))
    return [first] + [_make_inputs(torch, signature, shape, generator) for _ in range(count - 1)]


def run(manifest_path, reference, peers=None, rounds=5, budget_s=60.0, rtol=None, seed=0, log=sys.stderr,
        pairs=None, checkpoint=None):
    """Compiles, checks and times every candidate of a manifest; the results document.
    `checkpoint`, if given, is called with the document of the shapes finished so far after
    each shape (`complete` false until the last), so that a run stopped early keeps them."""
    import torch
    import fslc

    directory = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path) as f:
        manifest = json.load(f)
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2_bytes = getattr(properties, "L2_cache_size", 0) or 64 << 20
    by_shape = {}
    for candidate in manifest["candidates"]:
        by_shape.setdefault(shape_key(candidate["shape"]), []).append(candidate)
    results, peer_times = [], {}
    device = torch.cuda.get_device_properties(0)
    machine = {"gpu": device.name, "driver": _driver_version(), "date": datetime.date.today().isoformat()}
    for done, (key, candidates) in enumerate(by_shape.items(), 1):
        budget = ShapeBudget(budget_s)
        shape = candidates[0]["shape"]
        sets = None
        shape_results, selected, timed = [], None, {}
        for candidate in timing_order(candidates):
            result = {"id": candidate["id"], "shape": shape, "knobs": candidate["knobs"],
                      "heuristics": candidate.get("heuristics", False), "round": candidate.get("round", 1)}
            if "estimate_us" in candidate:  # kept beside the time: what checks the model
                result["estimate_us"] = candidate["estimate_us"]
            results.append(result)
            shape_results.append(result)
            if result["round"] == 2:
                if selected is None:
                    selected = fastest_single_knobs(shape_results, pairs or manifest.get("pairs", 0))
                    print("%s pairs of %s" % (key, selected), file=log)
                if not is_paired(candidate, selected):
                    result["status"] = STATUS_NOT_PAIRED
                    continue
            if budget.exhausted(candidate):
                result["status"] = "over-budget"
                continue
            try:
                with open(os.path.join(directory, candidate["source"])) as f:
                    text = f.read()
                # Variants run as compiled ahead of time: no size specialized. Otherwise the
                # fusion's static sizes are the shape's (knobs such as vector_width need them
                # static when the program is checked) and the others are specialized.
                variants = manifest.get("variants")
                if variants:
                    options = {"runtime_dims": variants, "policy": "none"}
                else:
                    text = with_static_sizes(text, manifest["fusion"], shape)
                    options = {"runtime_dims": None, "policy": "all"}
                # No tuning database (not an fsl.toml's either): each candidate is the
                # heuristics' schedule with its knobs, not an entry recorded earlier.
                program = fslc.load_text("%s_c%d" % (manifest["fusion"], candidate["id"]), text,
                                         target=manifest["target"], tuning_db="", **options)
                fusion = program[manifest["fusion"]]
                signature = fusion.signature
            except Exception as error:  # a candidate that does not compile is skipped
                result.update(status="compile-error", error=str(error))
                continue
            if sets is None:
                sets = _input_sets(torch, signature, shape, l2_bytes, seed)
                # Inout tensors change at every call: each check starts from these values.
                pristine = {name: t.clone() for name, t in sets[0].items()}
                expected = None
            try:
                for name, t in pristine.items():
                    sets[0][name].copy_(t)
                got = _call(fusion, signature, sets[0])
                torch.cuda.synchronize()
                if expected is None:
                    expected = reference({name: t.double() for name, t in pristine.items()}, shape)
            except Exception as error:
                result.update(status="launch-error", error=str(error))
                continue
            why = _mismatch(torch, signature, got, expected, rtol)
            if why is not None:
                result.update(status="mismatch", error=why)
                continue
            try:
                median, times = _time_graph(torch, lambda t: _call(fusion, signature, t), sets, rounds)
            except Exception as error:
                result.update(status="launch-error", error=str(error))
                continue
            result.update(status=STATUS_OK, time_ms=median, rounds_ms=times)
            timed[candidate["id"]] = (fusion, signature)
            print("%s c%d %s: %.4f ms" % (key, candidate["id"], candidate["knobs"], median), file=log)
        # The peers run in the confirmation round (their times then compare with the
        # confirmed ones); where there is none, after the screen, as the candidates were
        # timed: no other candidate ran, the re-timing failed, or a variant manifest, whose
        # one winner a guard over several shapes (geometric means of every candidate's
        # times) is compared as screened.
        confirmed = {}
        if sets and not manifest.get("variants"):
            def time_one(launch):
                return _time_graph(torch, launch, sets, rounds)[0]

            peer_calls = {name: (lambda t, function=function: function(t, shape))
                          for name, function in (peers or {}).items()}
            for name, call in list(peer_calls.items()):
                try:  # compiled (torch.compile) before the round, not inside it
                    call(sets[0])
                    torch.cuda.synchronize()
                except Exception as error:
                    print("%s peer %s failed: %s" % (key, name, error), file=log)
                    del peer_calls[name]
            calls = {i: (lambda t, fs=fs: _call(fs[0], fs[1], t)) for i, fs in timed.items()}
            confirmed = confirm(shape_results, calls, peer_calls, time_one, key, log)
        timed.clear()
        if confirmed:
            peer_times[key] = confirmed
        for name, function in (peers or {}).items() if sets and not confirmed else ():
            try:
                median, _ = _time_graph(torch, lambda t: function(t, shape), sets or [], rounds)
                peer_times.setdefault(key, {})[name] = median
            except Exception as error:
                print("%s peer %s failed: %s" % (key, name, error), file=log)
        if checkpoint is not None and done < len(by_shape):
            checkpoint(results_document(manifest, machine, peer_times, results, complete=False))
    return results_document(manifest, machine, peer_times, results, complete=True)


def results_document(manifest, machine, peer_times, results, complete):
    """`run`'s output: the results and peers' times by shape, the machine, and what `record`
    needs of the manifest (the variants' dimensions, the duplicates)."""
    return {
        "fusion": manifest["fusion"], "kind": manifest["kind"], "target": manifest["target"],
        "machine": machine, "complete": complete,
        "peers": peer_times, "results": results,
        **({"variants": manifest["variants"]} if manifest.get("variants") else {}),
        "duplicates": manifest.get("duplicates", []),
    }


def write_json(path, document):
    """Writes `document` to `path` whole or not at all (a run stopped mid-write leaves the
    last checkpoint)."""
    temporary = path + ".partial"
    with open(temporary, "w") as f:
        json.dump(document, f, indent=2)
    os.replace(temporary, path)


def _driver_version():
    try:
        import ctypes
        version = ctypes.c_int()
        ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version))
        return "%d.%d" % (version.value // 1000, version.value % 1000 // 10)
    except OSError:
        return ""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fslc.tune", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="compile, check and time a manifest's candidates (GPU)")
    run_parser.add_argument("manifest")
    run_parser.add_argument("--reference", required=True,
                            help="MODULE:FUNCTION(inputs as float64 tensors by name, shape) -> outputs by name")
    run_parser.add_argument("--peer", action="append", default=[],
                            help="NAME=MODULE:FUNCTION(inputs, shape), timed the same way (cuBLAS, ...)")
    run_parser.add_argument("--rounds", type=int, default=5)
    run_parser.add_argument("--budget", type=float, default=60.0, help="seconds a shape")
    run_parser.add_argument("--rtol", type=float, default=None)
    run_parser.add_argument("--pairs", type=int, default=None,
                            help="how many of the fastest single knobs the second round pairs "
                                 "(default: the manifest's, from fslc tune --pairs)")
    run_parser.add_argument("-o", "--output", required=True)
    compare_parser = commands.add_parser(
        "compare", help="whether two runs agree on each shape's winner (or a tie within 2 %%); exit 1 if not")
    compare_parser.add_argument("first")
    compare_parser.add_argument("second")
    record_parser = commands.add_parser("record", help="write the winners into a tuning database")
    record_parser.add_argument("results")
    record_parser.add_argument("-o", "--output", required=True, help="the database (updated if it exists)")
    args = parser.parse_args(argv)
    if args.command == "run":
        peers = {}
        for spec in args.peer:
            name, _, function = spec.partition("=")
            peers[name] = _load_callable(function)
        document = run(args.manifest, _load_callable(args.reference), peers, args.rounds, args.budget, args.rtol,
                       pairs=args.pairs, checkpoint=lambda partial: write_json(args.output, partial))
        write_json(args.output, document)
        return 0
    if args.command == "compare":
        documents = []
        for path in (args.first, args.second):
            with open(path) as f:
                documents.append(json.load(f))
        lines = compare_runs(*documents)
        for key, agree, text in lines:
            print("%s: %s: %s" % (key, "agree" if agree else "DISAGREE", text))
        disagree = sum(1 for _, agree, _ in lines if not agree)
        print("%d of %d shapes agree" % (len(lines) - disagree, len(lines)))
        return 1 if disagree else 0
    with open(args.results) as f:
        document = json.load(f)
    if document.get("complete") is False:
        shapes = len({shape_key(r["shape"]) for r in document.get("results", [])})
        print("fslc.tune record: %s holds the %d shape(s) a run finished before it stopped; "
              "only those are recorded%s" % (args.results, shapes,
                                             " (a variant's geometric mean is over those shapes "
                                             "alone, its entry guards every row count)"
                                             if document.get("variants") else ""),
              file=sys.stderr)
    existing = ""
    if os.path.exists(args.output):
        with open(args.output) as f:
            existing = f.read()
    with open(args.output, "w") as f:
        f.write(record(document, existing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
