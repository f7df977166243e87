"""Plots of tuning and benchmark results as SVG files (docs/tuning.md), with no plotting
library: one command regenerates them from the results JSON.

    python -m fslc.report results.json [more.json ...] -o plots/ [--peak-tflops 989]
                          [--bandwidth-gbps 4800]

For each fusion it writes `<fusion>-time.svg` (milliseconds against the shape) and, when
the work of each shape is known, `<fusion>-tflops.svg` (TFLOP/s), one series an
implementation: fslc's tuned winner, fslc's heuristics' choice, and each peer the results
timed (cuBLAS, ...), with the roofline: the least time (the most TFLOP/s) the peak
arithmetic rate and memory bandwidth allow.

The input is `python -m fslc.tune run`'s results document, or a benchmark document of
the same shape: {"fusion", "kind", "machine", "results": [{"shape", "status", "time_ms",
"heuristics"}], "peers": {shape: {name: ms}}, "work": {shape: {"flops", "bytes"}},
"roofline": {"peak_tflops", "bandwidth_gbps"}}. A matrix product's work is derived from
its M, N and K (2 MNK operations; a, b and the output of 2-byte elements read or written
once) when the document has none.
"""

import argparse
import importlib.util
import json
import math
import os
import sys
from xml.sax.saxutils import escape


def _tune_rules():
    """fslc.tune's winners' rules (pure Python: tune.py imports torch only to time), loaded
    from beside this file, so that the report also runs from a checkout without the package
    and plots the winner that `python -m fslc.tune record` writes."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tune.py")
    spec = importlib.util.spec_from_file_location("_fslc_tune_rules", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tune = _tune_rules()

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


shape_key = tune.shape_key


def shape_size(shape):
    return math.prod(shape.values())


def work_of(document, key, shape):
    """{"flops", "bytes"} of a shape, or None when unknown."""
    work = document.get("work", {}).get(key)
    if work:
        return work
    if document.get("kind") == "matmul" and all(d in shape for d in "MNK"):
        m, n, k = shape["M"], shape["N"], shape["K"]
        return {"flops": 2.0 * m * n * k, "bytes": 2.0 * (m * k + n * k + m * n)}
    return None


def series_of(document):
    """{implementation: {shape key: ms}} and the shapes by key, from one document."""
    results = document.get("results", [])
    shapes, heuristics = {}, {}
    for result in results:
        if result.get("status") != "ok" or result.get("time_ms") is None:
            continue
        shapes[shape_key(result["shape"])] = result["shape"]
        if result.get("heuristics"):
            heuristics[shape_key(result["shape"])] = result["time_ms"]
    # The tuned time is the winner's, chosen as `record` chooses it: the fastest of the two
    # the confirmation round timed side by side, the heuristics' within the tie; for a
    # launch-time variant run (`--variants`), each guard's winner by the geometric mean over
    # its shapes, drawn at each of them.
    tuned = {}
    if document.get("variants"):
        timed = {}
        for r in results:
            if r.get("status") == "ok" and r.get("time_ms") is not None:
                knobs = tune.HEURISTICS_KEY if r.get("heuristics") else tune._knob_key(r["knobs"])
                timed[(shape_key(r["shape"]), knobs)] = r["time_ms"]
        by_id = {(shape_key(r["shape"]), r["id"]): r for r in results if "id" in r}
        for d in document.get("duplicates", []):
            same = by_id.get((shape_key(d["shape"]), d["same_as"]))
            if same is not None and same.get("status") == "ok" and same.get("time_ms") is not None:
                timed.setdefault((shape_key(d["shape"]), tune._knob_key(d["knobs"])), same["time_ms"])
        winners = tune.choose_variant_winners(results, document.get("duplicates"), document["variants"])
        for winner in winners.values():
            if winner is None:
                continue
            knobs = tune.HEURISTICS_KEY if winner["heuristics"] else tune._knob_key(winner["knobs"])
            for key in winner["shapes"]:
                if (key, knobs) in timed:
                    tuned[key] = timed[(key, knobs)]
    else:
        tuned = {key: winner["time_ms"] for key, winner in tune.choose_winners(results).items() if winner}
    # Without a candidate other than the heuristics' (a benchmark), "tuned" is the same line.
    tuned_any = any(not r.get("heuristics") and r.get("status") == "ok" for r in results)
    series = {"fslc tuned": tuned, "fslc heuristics": heuristics} if tuned_any else {"fslc heuristics": heuristics}
    for key, peers in document.get("peers", {}).items():
        for name, ms in peers.items():
            series.setdefault(name, {})[key] = ms
            if key not in shapes:
                shapes[key] = dict(part.split("=") for part in key.split(","))
                shapes[key] = {d: int(v) for d, v in shapes[key].items()}
    labels = document.get("labels", {})
    return {labels.get(name, name): points for name, points in series.items() if points}, shapes


def roofline_ms(work, peak_tflops, bandwidth_gbps):
    """The least milliseconds the work can take, or None without the numbers."""
    if not work:
        return None
    times = []
    if peak_tflops and work.get("flops"):
        times.append(work["flops"] / (peak_tflops * 1e12) * 1e3)
    if bandwidth_gbps and work.get("bytes"):
        times.append(work["bytes"] / (bandwidth_gbps * 1e9) * 1e3)
    return max(times) if times else None


def nice_ticks(low, high, count=5):
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1
    step = 10 ** math.floor(math.log10((high - low) / count))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= count:
            step *= factor
            break
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 12))
    return ticks


def log_ticks(low, high):
    """1, 2 and 5 times powers of ten covering [low, high] (both > 0)."""
    exponent = math.floor(math.log10(low))
    values = []
    while not values or values[-1] < high:
        for factor in (1, 2, 5):
            values.append(float("%.12g" % (factor * 10.0 ** exponent)))
            if values[-1] >= high:
                break
        exponent += 1
    first = max(i for i, v in enumerate(values) if v <= low)
    return values[first:]


# Values spread wider than this share a logarithmic axis (µs to ms in one plot).
LOG_SPREAD = 30.0


def svg_plot(title, y_label, labels, series, roofline=None, width=None, height=500):
    """An SVG line plot: categorical x (`labels`), one polyline a series ({name: [y or
    None per label]}), and the roofline as a dashed line; the y axis is logarithmic when
    the values spread over more than LOG_SPREAD (the axis label says so). Returns the text."""
    left, right, top, bottom = 80, 220, 50, 110
    width = width or max(880, left + right + 16 * len(labels))
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for ys in series.values() for v in ys if v is not None]
    values += [v for v in (roofline or []) if v is not None]
    positive = [v for v in values if v > 0]
    log = bool(positive) and len(positive) == len(values) and max(positive) / min(positive) > LOG_SPREAD
    if log:
        ticks = log_ticks(min(positive), max(positive))
        y_label += ", logarithmic"
        low, high = math.log10(ticks[0]), math.log10(ticks[-1])
    else:
        ticks = nice_ticks(0.0, max(values) if values else 1.0)
    y_max = ticks[-1] or 1.0

    def x_at(i):
        return left + (plot_w * (i + 0.5) / max(1, len(labels)))

    def y_at(v):
        if log:
            return top + plot_h * (1 - (math.log10(v) - low) / ((high - low) or 1.0))
        return top + plot_h * (1 - v / y_max)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="12">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="16" text-anchor="middle">%s</text>' % (left + plot_w / 2, escape(title))]
    for tick in ticks:
        y = y_at(tick)
        out.append('<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, y, left + plot_w, y))
        out.append('<text class="y-tick" x="%d" y="%.1f" text-anchor="end">%s</text>' % (left - 6, y + 4, "%g" % tick))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top, left, top + plot_h))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top + plot_h, left + plot_w, top + plot_h))
    out.append('<text class="y-label" transform="translate(20,%d) rotate(-90)" text-anchor="middle">%s</text>'
               % (top + plot_h / 2, escape(y_label)))
    for i, label in enumerate(labels):
        out.append('<text class="x-label" transform="translate(%.1f,%d) rotate(35)" font-size="10">%s</text>'
                   % (x_at(i) - 4, top + plot_h + 14, escape(label)))
    legend_y = top
    if roofline and any(v is not None for v in roofline):
        points = " ".join("%.1f,%.1f" % (x_at(i), y_at(v)) for i, v in enumerate(roofline) if v is not None)
        out.append('<polyline class="roofline" fill="none" stroke="black" stroke-dasharray="6,4" points="%s"/>' % points)
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-dasharray="6,4"/>'
                   % (left + plot_w + 16, legend_y, left + plot_w + 40, legend_y))
        out.append('<text x="%d" y="%d">roofline</text>' % (left + plot_w + 46, legend_y + 4))
        legend_y += 20
    for index, (name, ys) in enumerate(series.items()):
        color = COLORS[index % len(COLORS)]
        points = [(x_at(i), y_at(v)) for i, v in enumerate(ys) if v is not None]
        out.append('<polyline class="series" data-name="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                   % (escape(name, {'"': "&quot;"}), color, " ".join("%.1f,%.1f" % p for p in points)))
        for x, y in points:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, y, color))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                   % (left + plot_w + 16, legend_y, left + plot_w + 40, legend_y, color))
        out.append('<text x="%d" y="%d">%s</text>' % (left + plot_w + 46, legend_y + 4, escape(name)))
        legend_y += 20
    out.append("</svg>")
    return "\n".join(out) + "\n"


def plots(document, peak_tflops=None, bandwidth_gbps=None, stem=None):
    """{file name: SVG text} for one document, named `<stem>-time.svg` (the stem: the
    fusion's name unless given)."""
    roof = document.get("roofline", {})
    peak_tflops = peak_tflops or roof.get("peak_tflops")
    bandwidth_gbps = bandwidth_gbps or roof.get("bandwidth_gbps")
    series, shapes = series_of(document)
    keys = sorted(shapes, key=lambda k: (shape_size(shapes[k]), k))
    fusion = document.get("fusion", "fusion")
    stem = stem or fusion
    machine = document.get("machine", {}).get("gpu", "")
    suffix = " on %s" % machine if machine else ""
    times = {name: [points.get(k) for k in keys] for name, points in series.items()}
    works = [work_of(document, k, shapes[k]) for k in keys]
    roof_ms = [roofline_ms(w, peak_tflops, bandwidth_gbps) for w in works]
    if stem != fusion:
        suffix += " (%s)" % stem
    files = {"%s-time.svg" % stem: svg_plot("%s: time%s" % (fusion, suffix), "milliseconds (lower is better)",
                                               keys, times, roof_ms)}
    if all(w and w.get("flops") for w in works) and keys:
        rates = {name: [None if ms is None else w["flops"] / (ms * 1e-3) / 1e12 for ms, w in zip(ys, works)]
                 for name, ys in times.items()}
        roof_rate = [None if ms is None else w["flops"] / (ms * 1e-3) / 1e12 for ms, w in zip(roof_ms, works)]
        files["%s-tflops.svg" % stem] = svg_plot("%s: TFLOP/s%s" % (fusion, suffix), "TFLOP/s (higher is better)",
                                                   keys, rates, roof_rate)
    return files


def table(document):
    """A markdown table of one document: a row a shape (in the plots' order), a column an
    implementation, milliseconds to 4 significant digits ("-" where it did not run)."""
    series, shapes = series_of(document)
    keys = sorted(shapes, key=lambda k: (shape_size(shapes[k]), k))
    names = list(series)
    lines = ["| shape | %s |" % " | ".join("%s ms" % name for name in names),
             "|---|" + "---|" * len(names)]
    for key in keys:
        cells = ["-" if series[name].get(key) is None else "%.4g" % series[name][key] for name in names]
        lines.append("| %s | %s |" % (key, " | ".join(cells)))
    return "\n".join(lines) + "\n"


def tables_text(documents, paths):
    """The tables file: a section a document, titled with its fusion, file and origin."""
    out = ["# Result tables", "",
           "Written by `scripts/report.sh` (`python -m fslc.report ... --table`) from the result files "
           "beside it; edit those, not this file.", ""]
    for document, path in zip(documents, paths):
        machine = document.get("machine", {})
        out.append("## %s (%s)" % (document.get("fusion", "fusion"), os.path.basename(path)))
        out.append("")
        about = [machine.get("gpu"), machine.get("date"), document.get("source")]
        if any(about):
            out.append("; ".join(a for a in about if a) + ".")
            out.append("")
        out.append(table(document))
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fslc.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results or benchmark JSON files")
    parser.add_argument("-o", "--output", required=True, help="the folder of the SVG files")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the GPU's peak arithmetic rate")
    parser.add_argument("--bandwidth-gbps", type=float, default=None, help="the GPU's memory bandwidth")
    parser.add_argument("--table", default=None, help="also write the markdown tables of every document here")
    args = parser.parse_args(argv)
    os.makedirs(args.output, exist_ok=True)
    documents = []
    for path in args.results:
        with open(path) as f:
            documents.append(json.load(f))
    # A fusion with one document: its plots are named by the fusion; with several (runs
    # kept side by side), each by its file's name, so that none overwrites another.
    fusions = [d.get("fusion", "fusion") for d in documents]
    for document, path in zip(documents, args.results):
        fusion = document.get("fusion", "fusion")
        stem = fusion if fusions.count(fusion) == 1 else os.path.splitext(os.path.basename(path))[0]
        for name, text in plots(document, args.peak_tflops, args.bandwidth_gbps, stem).items():
            with open(os.path.join(args.output, name), "w") as f:
                f.write(text)
            print(os.path.join(args.output, name))
    if args.table:
        with open(args.table, "w") as f:
            f.write(tables_text(documents, args.results))
        print(args.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
