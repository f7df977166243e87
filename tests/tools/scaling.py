#!/usr/bin/env python3
"""Every phase of fslc is linear (or n log n) in its input: time at n and 4n.

Each shape is an input that once made a phase quadratic or worse (issue 16):

  fn-nesting  fns that call the previous one twice on the same argument
              (f(x) = g(x) + g(x) * 0.5), 60 and 240 levels: inlined without sharing, the
              IR doubled with every level (2^240 nodes never finish)
  let-chain   a chain of lets, through --emit=check and --emit=cuda
  long-line   thousands of directives on one line, through --emit=ast
  one-line-cuda  thousands of fusions on one line, through --emit=cuda (each kernel
              statement names its source line)
  auto-many   many fusions with `schedule f = auto;`, through --emit=check
  when-guards one fusion with thousands of `when` schedules, through --emit=check (the
              overlap and coverage check walked every schedule at every size: 20,000
              guards took 46.6 s); 20,000 must also check in under WHEN_LIMIT_S

The time of a run is the CPU time fslc used (user + system, from wait4), the best of a
few runs, less that of a trivial input (start-up); the ratio between 4n and n must stay
under a bound (MAX_RATIO unless the shape says). Linear is 4, quadratic 16: the bound is
loose so that a loaded machine does not fail a linear phase, and still catches a quadratic
one. A ratio is judged only when the 4n run takes at least MIN_MEASURED_S: below that the
timer's noise (a millisecond or two) decides the ratio, and a phase that finishes 4n that
fast is not a cost to anyone. Each run must exit 0 (an input the compiler refuses
measures its error path, not the phase) and has a wall-clock limit, so an exponential
phase fails instead of hanging.

usage: scaling.py FSLC
"""
import os
import subprocess
import sys
import tempfile
import threading

MAX_RATIO = 8.0
RUN_LIMIT_S = 30
REPEATS = 2
MIN_MEASURED_S = 0.05


def fn_nesting(n):
    # Not f16 or f32: those are type names. The same argument twice keeps the shared IR
    # linear (x * 2.0 in one call would make n (n + 1) / 2 distinct products).
    lines = ["fn level0(x) = x * 1.5;"]
    for i in range(1, n):
        lines.append(f"fn level{i}(x) = level{i - 1}(x) + level{i - 1}(x) * 0.5;")
    lines.append(f"fusion g(x: f32[T, H]) -> (y: f32[T, H]) {{ y = level{n - 1}(x); }}")
    return "\n".join(lines) + "\n"


def let_chain(n):
    body = "".join(f"    let a{i} = a{i - 1} + 1.0;\n" for i in range(1, n))
    return (f"fusion g(x: f32[T, H]) -> (y: f32[T, H]) {{\n    let a0 = x;\n{body}"
            f"    y = a{n - 1};\n}}\nschedule g = auto;\n")


def long_line(n):
    return ("fusion f(x: f32[T, H]) -> (y: f32[T, H]) { y = x; }\n"
            "schedule f {" + " split H by 2 -> (a, b);" * n + " }\n")


def fusions_on_one_line(n):
    return "".join(f"fusion fu{i}(x: f32[T, H]) -> (y: f32[T, H]) {{ y = x + 1.0; }} "
                   f"schedule fu{i} {{ parallelize T -> BIDx, H -> TIDx; }} "
                   for i in range(n)) + "\n"


def when_guards(n):
    schedules = "".join(f"schedule g when T >= {4 * i} && T < {4 * i + 4} {{ parallelize T -> BIDx; }}\n"
                        for i in range(1, n))
    return ("fusion g(x: f32[T, H]) -> (y: f32[T, H]) { y = x + 1.0; }\n" + schedules +
            "schedule g { parallelize T -> BIDx; }\n")


def auto_many(n):
    return "".join(f"fusion fu{i}(x: f32[T, H]) -> (y: f32[T, H]) {{ y = x + 1.0; }}\n"
                   f"schedule fu{i} = auto;\n" for i in range(n))


# name, generator, n, fslc arguments, bound on the ratio. The let chain is checked (its
# schedule was quadratic: 14.7, now 4.2), and lowered: every lowering pass and its
# verifier (sets of variables, n log n, and a working set past the caches) measure 5.4 to
# 6, where the quadratic version was 12, hence the looser bound. The fusions are
# independent: measured 4.0, and 9.3 when quadratic.
SHAPES = [
    ("fn-nesting", fn_nesting, 60, ["--emit=fusion-ir"], MAX_RATIO),
    ("let-chain", let_chain, 4000, ["--emit=check"], MAX_RATIO),
    ("let-chain-cuda", let_chain, 3000, ["--emit=cuda"], 10.0),
    ("long-line", long_line, 5000, ["--emit=ast"], MAX_RATIO),
    ("one-line-cuda", fusions_on_one_line, 1000, ["--emit=cuda"], MAX_RATIO),
    ("auto-many", auto_many, 3000, ["--emit=check"], 7.0),
    ("when-guards", when_guards, 5000, ["--emit=check"], MAX_RATIO),
]
# The 4n run of when-guards (20,000 guards) in CPU seconds, at most.
WHEN_LIMIT_S = 2.0


class RunFailed(Exception):
    pass


def cpu_seconds(fslc, args, path):
    """CPU seconds of one run, or None when it ran past RUN_LIMIT_S; RunFailed when fslc
    exits with another status than 0."""
    with open(os.devnull, "wb") as sink:
        process = subprocess.Popen([fslc, *args, path], stdout=sink, stderr=sink)
        timer = threading.Timer(RUN_LIMIT_S, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timed_out = not timer.is_alive()
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        if timed_out:
            return None
        if process.returncode != 0:
            raise RunFailed(f"fslc {' '.join(args)} {os.path.basename(path)} exited with "
                            f"status {process.returncode}")
        return usage.ru_utime + usage.ru_stime


def best(fslc, args, path, repeats=REPEATS):
    times = [cpu_seconds(fslc, args, path) for _ in range(repeats)]
    return None if None in times else min(times)


def main():
    fslc = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as work:
        trivial = os.path.join(work, "trivial.fsl")
        with open(trivial, "w") as handle:
            handle.write("fusion f(x: f32[T]) -> (y: f32[T]) { y = x; }\n")
        for name, generate, n, args, bound in SHAPES:
            baseline = best(fslc, args, trivial) or 0.0
            paths = []
            for size in (n, 4 * n):
                paths.append(os.path.join(work, f"{name}-{size}.fsl"))
                with open(paths[-1], "w") as handle:
                    handle.write(generate(size))
            # The small run, whose noise weighs most, is repeated; the large one only
            # when its first time is over the bound.
            try:
                times = [best(fslc, args, paths[0]), best(fslc, args, paths[1], 1)]
            except RunFailed as failure:
                failures.append(f"{name}: {failure}")
                print(f"{name}: {failure}")
                continue
            ratio = None
            for attempt in range(REPEATS):
                if None in times:
                    break
                small, large = (max(t - baseline, 0.002) for t in times)
                ratio = large / small
                if large < MIN_MEASURED_S:
                    break
                if ratio <= bound or attempt + 1 == REPEATS:
                    break
                again = best(fslc, args, paths[1], 1)
                times[1] = None if again is None else min(times[1], again)
            if None in times:
                failures.append(f"{name}: a run took more than {RUN_LIMIT_S} s")
                print(f"{name}: n={n} {times[0]}, 4n={4 * n} {times[1]}: TIMEOUT")
                continue
            if name == "when-guards" and large > WHEN_LIMIT_S:
                failures.append(f"{name}: {4 * n} guards took {large:.2f} s (at most {WHEN_LIMIT_S})")
            if large < MIN_MEASURED_S:
                print(f"{name}: n={n} {small:.3f}s, 4n={4 * n} {large:.3f}s: ok (4n under "
                      f"{MIN_MEASURED_S} s, ratio not judged)")
                continue
            verdict = "ok" if ratio <= bound else "FAIL"
            print(f"{name}: n={n} {small:.3f}s, 4n={4 * n} {large:.3f}s, "
                  f"ratio {ratio:.1f} (at most {bound}) {verdict}")
            if ratio > bound:
                failures.append(f"{name}: 4n takes {ratio:.1f} times as long as n")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
