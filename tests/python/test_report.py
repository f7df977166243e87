#!/usr/bin/env python3
"""python/fslc/report.py and scripts/report.sh: the plots' series, axes and scales from a
small results document, the tables, and that the plots and tables kept in docs/perf/ are
what the report makes of the result files there (scripts/report.sh was run after the last
change of either).

usage: test_report.py REPO_ROOT WORK_DIR
"""

import filecmp
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

REPO, WORK = sys.argv[1:3] if len(sys.argv) >= 3 else (None, None)
SVG = "{http://www.w3.org/2000/svg}"
report = None


def load_report():
    # By path, as scripts/report.sh runs it: the package would load libfsl.so.
    spec = importlib.util.spec_from_file_location("fslc_report", os.path.join(REPO, "python", "fslc", "report.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def norm_document():
    """rms_norm at three shapes: fslc's static kernel, its runtime-H kernel and eager,
    microseconds to tens of microseconds (a spread for the logarithmic axis)."""
    shapes = [{"T": 1, "H": 4096}, {"T": 1024, "H": 4096}, {"T": 16384, "H": 4096}]
    static, runtime, eager = [0.0012, 0.0090, 0.1500], [0.0016, 0.0100, 0.1520], [0.0143, 0.0500, 0.6000]
    document = {"fusion": "rms_norm", "kind": "inner_persistent", "target": "h200",
                "machine": {"gpu": "NVIDIA H200", "date": "2026-12-02"}, "source": "a test",
                "labels": {"fslc heuristics": "fslc static H"},
                "roofline": {"bandwidth_gbps": 4000.0}, "results": [], "peers": {}, "work": {}}
    for index, shape in enumerate(shapes):
        document["results"].append({"id": index, "shape": shape, "knobs": {}, "heuristics": True,
                                    "status": "ok", "time_ms": static[index]})
        key = "H=%d,T=%d" % (shape["H"], shape["T"])
        document["peers"][key] = {"fslc aot": runtime[index], "eager": eager[index]}
        document["work"][key] = {"bytes": 4.0 * shape["T"] * shape["H"]}
    return document


class Plot(unittest.TestCase):
    def setUp(self):
        self.out = os.path.join(WORK, "plots")
        self.path = os.path.join(WORK, "rms_norm.json")
        with open(self.path, "w") as f:
            json.dump(norm_document(), f)
        self.assertEqual(report.main([self.path, "-o", self.out, "--table", os.path.join(self.out, "tables.md")]), 0)
        with open(os.path.join(self.out, "rms_norm-time.svg")) as f:
            self.root = ET.fromstring(f.read())

    def texts(self, cls):
        return [t.text for t in self.root.iter(SVG + "text") if t.get("class") == cls]

    def series(self):
        return {p.get("data-name"): [tuple(map(float, xy.split(","))) for xy in p.get("points").split()]
                for p in self.root.iter(SVG + "polyline") if p.get("class") == "series"}

    def test_only_time_without_flops(self):
        self.assertEqual(sorted(f for f in os.listdir(self.out) if f.endswith(".svg")), ["rms_norm-time.svg"])

    def test_one_series_an_implementation_under_its_label(self):
        # No candidate but the heuristics': no "fslc tuned" line repeating it; the label given.
        series = self.series()
        self.assertEqual(sorted(series), ["eager", "fslc aot", "fslc static H"])
        for points in series.values():
            self.assertEqual(len(points), 3)
        legend = [t.text for t in self.root.iter(SVG + "text") if t.text in series]
        self.assertEqual(sorted(legend), sorted(series))

    def test_axes(self):
        # x: the shapes in order of size; y: milliseconds on a logarithmic scale from the
        # roofline at T = 1 (16 KB at 4 TB/s: 4.1e-6 ms) to eager at T = 16384 (0.6 ms), ticks
        # 1, 2, 5 times powers of ten rising up the plot.
        self.assertEqual(self.texts("x-label"), ["H=4096,T=1", "H=4096,T=1024", "H=4096,T=16384"])
        self.assertEqual(self.texts("y-label"), ["milliseconds (lower is better), logarithmic"])
        ticks = [float(t) for t in self.texts("y-tick")]
        self.assertEqual(ticks[:3], [2e-06, 5e-06, 1e-05])
        self.assertEqual(ticks[-3:], [0.2, 0.5, 1.0])
        self.assertEqual(len(ticks), 18)
        heights = [float(t.get("y")) for t in self.root.iter(SVG + "text") if t.get("class") == "y-tick"]
        self.assertEqual(heights, sorted(heights, reverse=True))

    def test_points_where_their_values_are(self):
        series = self.series()
        # At each shape the faster implementation is lower in the picture (larger y), and
        # equal steps of log10 are equal distances: 0.0012 -> 0.012 as far as 0.015 -> 0.15.
        for i in range(3):
            self.assertGreater(series["fslc static H"][i][1], series["fslc aot"][i][1])
            self.assertGreater(series["fslc aot"][i][1], series["eager"][i][1])
        ticks = {float(t.text): float(t.get("y")) - 4 for t in self.root.iter(SVG + "text")
                 if t.get("class") == "y-tick"}
        decade = ticks[0.001] - ticks[0.01]
        self.assertAlmostEqual(ticks[0.01] - ticks[0.1], decade, delta=0.2)
        import math
        expected = ticks[0.001] - decade * math.log10(0.0012 / 0.001)
        self.assertAlmostEqual(series["fslc static H"][0][1], expected, delta=0.2)

    def test_roofline_from_the_bandwidth(self):
        roofline = [p for p in self.root.iter(SVG + "polyline") if p.get("class") == "roofline"]
        self.assertEqual(len(roofline), 1)
        self.assertEqual(len(roofline[0].get("points").split()), 3)

    def test_linear_axis_for_a_narrow_spread(self):
        document = norm_document()
        document["results"] = document["results"][:1]
        document["peers"] = {"H=4096,T=1": document["peers"]["H=4096,T=1"]}
        document["work"] = {}
        root = ET.fromstring(report.plots(document)["rms_norm-time.svg"])
        labels = [t.text for t in root.iter(SVG + "text") if t.get("class") == "y-label"]
        self.assertEqual(labels, ["milliseconds (lower is better)"])
        ticks = [float(t.text) for t in root.iter(SVG + "text") if t.get("class") == "y-tick"]
        self.assertEqual(ticks[0], 0.0)

    def test_table(self):
        with open(os.path.join(self.out, "tables.md")) as f:
            text = f.read()
        self.assertIn("## rms_norm (rms_norm.json)\n\nNVIDIA H200; 2026-12-02; a test.\n", text)
        self.assertIn("| shape | fslc static H ms | fslc aot ms | eager ms |\n|---|---|---|---|\n", text)
        self.assertIn("| H=4096,T=1024 | 0.009 | 0.01 | 0.05 |\n", text)


class KeptReport(unittest.TestCase):
    def test_docs_perf_is_what_report_sh_makes(self):
        out = os.path.join(WORK, "regenerated")
        shutil.rmtree(out, ignore_errors=True)  # a run before may have left other names
        subprocess.run(["bash", os.path.join(REPO, "scripts", "report.sh"), out], check=True, stdout=subprocess.DEVNULL)
        kept = os.path.join(REPO, "docs", "perf")
        made = sorted(os.listdir(out))
        self.assertEqual(made, sorted(f for f in os.listdir(kept) if not f.endswith(".json")))
        self.assertIn("rms_norm_add-r3-time.svg", made)  # two runs of a fusion: named by file
        self.assertIn("layer_norm-time.svg", made)  # one run: named by the fusion
        _, mismatch, errors = filecmp.cmpfiles(kept, out, made, shallow=False)
        self.assertEqual(mismatch + errors, [], "docs/perf is stale: run scripts/report.sh")

    def test_performance_md_embeds_every_plot(self):
        with open(os.path.join(REPO, "docs", "performance.md")) as f:
            text = f.read()
        for name in os.listdir(os.path.join(REPO, "docs", "perf")):
            if name.endswith(".svg"):
                self.assertTrue("](perf/%s)" % name in text, "docs/performance.md does not show perf/%s" % name)


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    report = load_report()
    unittest.main(argv=[sys.argv[0]], verbosity=1)
