#!/usr/bin/env python3
"""The pure logic of python/fslc/tune.py and python/fslc/report.py, without torch or a GPU: choosing the winners
(the fastest, unless within 2 % of the heuristics' choice; failures never chosen), the
database entries and their update, and the whole path `fslc tune` -> a results file ->
`record` -> a database that fslc reads back with --tuning-db; the report's SVG plots of a
fake results file (valid XML, one series an implementation, the roofline).

usage: test_tune.py FSLC REPO_ROOT WORK_DIR
"""

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import unittest

FSLC, REPO, WORK = sys.argv[1:4] if len(sys.argv) >= 4 else (None, None, None)


def load_module(name):
    # By path: importing the package would load libfsl.so, which this test does not need.
    path = os.path.join(REPO, "python", "fslc", name + ".py")
    spec = importlib.util.spec_from_file_location("fslc_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tune = None
report = None
SHAPE = {"M": 4096, "N": 14336, "K": 5120}
SMALL = {"M": 64, "N": 4096, "K": 4096}


def result(id, time_ms, shape=SHAPE, knobs=None, heuristics=False, status="ok"):
    r = {"id": id, "shape": shape, "knobs": knobs if knobs is not None else {"tile_n": 128 + id},
         "heuristics": heuristics, "status": status, "rounds_ms": [time_ms] * 5}
    if time_ms is not None:
        r["time_ms"] = time_ms
    return r


class Winners(unittest.TestCase):
    def test_faster_by_more_than_two_percent_wins(self):
        winners = tune.choose_winners([result(0, 1.0, knobs={}, heuristics=True), result(1, 0.97)])
        self.assertEqual(winners[tune.shape_key(SHAPE)]["id"], 1)

    def test_within_two_percent_keeps_the_heuristics(self):
        winners = tune.choose_winners([result(0, 1.0, knobs={}, heuristics=True), result(1, 0.985)])
        self.assertEqual(winners[tune.shape_key(SHAPE)]["id"], 0)

    def test_failures_are_never_chosen(self):
        results = [result(0, 1.0, knobs={}, heuristics=True), result(1, 0.5, status="mismatch"),
                   result(2, 0.1, status="compile-error"), result(3, None, status="launch-error"),
                   result(4, 0.9)]
        self.assertEqual(tune.choose_winners(results)[tune.shape_key(SHAPE)]["id"], 4)

    def test_failed_heuristics_leave_the_fastest(self):
        results = [result(0, 1.0, knobs={}, heuristics=True, status="mismatch"), result(1, 0.99), result(2, 1.2)]
        self.assertEqual(tune.choose_winners(results)[tune.shape_key(SHAPE)]["id"], 1)

    def test_confirmed_times_decide(self):
        # Screened, c2 looked fastest; side by side with the heuristics (confirm_ms) c1 was
        # re-timed at 0.99: the heuristics stay, and c2's lone screening time is not compared.
        heuristics = dict(result(0, 1.0, knobs={}, heuristics=True), confirm_ms=[1.0, 1.0])
        confirmed = dict(result(1, 0.99), confirm_ms=[0.99, 0.99], screen_ms=0.9)
        winners = tune.choose_winners([heuristics, confirmed, result(2, 0.95)])
        self.assertEqual(winners[tune.shape_key(SHAPE)]["id"], 0)

    def test_a_confirmed_measurement_says_so(self):
        winner = dict(result(1, 0.99), confirm_ms=[0.99] * 4)
        heuristics = dict(result(0, 1.1, knobs={}, heuristics=True), confirm_ms=[1.1] * 4)
        text = tune.measurement_text(winner, heuristics, {}, {"gpu": "NVIDIA H200"})
        self.assertIn("measured: 0.9900 ms (median of 4 timings alternated with the heuristics', 5 rounds each)",
                      text)
        self.assertIn("heuristics 1.1000 ms (-10.0 %)", text)

    def test_the_confirmation_alternates_forward_and_back(self):
        # heuristics (0), the fastest other (1), two peers (2, 3): four timings each.
        self.assertEqual(tune.confirmation_order(4, 4), [0, 1, 2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0])

    def test_peers_are_timed_in_the_confirmation(self):
        # The clocks drift: every timing is slower than the one before. Timed in the
        # alternation, each implementation sees the drift alike, and the peers' times
        # compare with the confirmed ones (a peer timed after the round would look slower).
        clock = {"now": 0.0}
        base = {"heur": 1.0, "best": 0.9, "cublas": 0.8}

        def time_one(call):
            clock["now"] += 0.001
            return base[call] + clock["now"]

        results = [result(0, 1.0, knobs={}, heuristics=True), result(1, 0.9), result(2, 0.95)]
        log = open(os.devnull, "w")
        peers = tune.confirm(results, {0: "heur", 1: "best", 2: "other"}, {"cublas": "cublas"},
                             time_one, "M=4096", log)
        self.assertEqual(len(results[0]["confirm_ms"]), tune.CONFIRM_TIMINGS)
        self.assertEqual(results[0]["screen_ms"], 1.0)
        self.assertNotIn("confirm_ms", results[2])  # only the fastest other is confirmed
        # Each median is its base plus the same mean drift (the order is symmetric).
        drift = [t - 1.0 for t in results[0]["confirm_ms"]]
        self.assertAlmostEqual(results[1]["time_ms"] - 0.9, statistics.median(drift))
        self.assertAlmostEqual(peers["cublas"] - 0.8, statistics.median(drift))

    def test_a_failed_candidate_keeps_the_screen_and_gives_no_peer_time(self):
        def time_one(call):
            raise RuntimeError("launch failed")

        results = [result(0, 1.0, knobs={}, heuristics=True), result(1, 0.9)]
        peers = tune.confirm(results, {0: "heur", 1: "best"}, {"cublas": "cublas"}, time_one, "k",
                             open(os.devnull, "w"))
        self.assertEqual(peers, {})
        self.assertEqual(results[1]["time_ms"], 0.9)
        self.assertNotIn("confirm_ms", results[1])

    def test_a_failed_peer_leaves_the_round_and_the_candidates_confirmed(self):
        calls = []

        def time_one(call):
            calls.append(call)
            if call == "broken":
                raise RuntimeError("peer launch failed")
            return {"heur": 1.0, "best": 0.9, "cublas": 0.8}[call]

        results = [result(0, 1.0, knobs={}, heuristics=True), result(1, 0.95)]
        peers = tune.confirm(results, {0: "heur", 1: "best"}, {"broken": "broken", "cublas": "cublas"},
                             time_one, "k", open(os.devnull, "w"))
        self.assertEqual(peers, {"cublas": 0.8})
        self.assertEqual(results[1]["time_ms"], 0.9)  # confirmed, not the screen's 0.95
        self.assertEqual(calls.count("broken"), 1)  # not timed again after it failed
        self.assertEqual(calls.count("cublas"), tune.CONFIRM_TIMINGS)

    def test_nothing_to_confirm_without_another_candidate(self):
        results = [result(0, 1.0, knobs={}, heuristics=True), result(1, None, status="mismatch")]
        self.assertEqual(tune.confirm(results, {0: "heur"}, {"cublas": "cublas"}, lambda call: 1.0, "k",
                                      open(os.devnull, "w")), {})

    def test_a_shape_where_everything_failed_has_no_winner(self):
        results = [result(0, None, knobs={}, heuristics=True, status="compile-error"),
                   result(1, 0.9, shape=SMALL)]
        winners = tune.choose_winners(results)
        self.assertIsNone(winners[tune.shape_key(SHAPE)])
        self.assertEqual(winners[tune.shape_key(SMALL)]["id"], 1)


class StaticSizes(unittest.TestCase):
    """The runner gives a candidate's fusion the shape's static sizes (knobs such as
    vector_width are checked against them when the program loads)."""

    TEXT = ("fusion rms_norm<H = 4096>(x: bf16[T, H]) -> (y: bf16[T, H]) { y = x; }\n"
            "fusion rms_norm_add<H = 4096>(x: bf16[T, H]) -> (y: bf16[T, H]) { y = x; }\n")

    def test_only_the_tuned_fusion_and_the_shapes_dimensions(self):
        text = tune.with_static_sizes(self.TEXT, "rms_norm", {"H": 2048, "T": 1024})
        self.assertIn("fusion rms_norm<H = 2048>", text)
        self.assertIn("fusion rms_norm_add<H = 4096>", text)

    def test_dimensions_the_shape_does_not_give_keep_their_sizes(self):
        text = tune.with_static_sizes("fusion mm<M = 4, N = 8>(a: f32[M]) -> (y: f32[M]) { y = a; }",
                                      "mm", {"N": 16, "K": 3})
        self.assertIn("fusion mm<M = 4, N = 16>", text)

    def test_fusions_paired_by_backward_take_the_sizes_too(self):
        # A backward fusion's saved tensors must keep its forward's sizes (and so its
        # siblings'): tuning rms_norm_grad at H = 2048 sets H in rms_norm_train too.
        text = ("fusion rms_norm_train<H = 4096>(x: bf16[T, H]) -> (y: bf16[T, H]) backward rms_norm_grad {\n}\n"
                "fusion rms_norm_grad<H = 4096>(x: bf16[T, H], grad_y: bf16[T, H]) -> (grad_x: bf16[T, H]) {\n}\n"
                "fusion softmax<S = 4096>(x: bf16[T, S]) -> (y: bf16[T, S]) backward softmax_backward, other {\n}\n"
                "fusion rms_norm<H = 4096>(x: bf16[T, H]) -> (y: bf16[T, H]) {\n}\n")
        self.assertEqual(tune.paired_fusions(text, "rms_norm_grad"), {"rms_norm_grad", "rms_norm_train"})
        self.assertEqual(tune.paired_fusions(text, "other"), {"other", "softmax", "softmax_backward"})
        out = tune.with_static_sizes(text, "rms_norm_grad", {"H": 2048, "T": 64})
        self.assertIn("fusion rms_norm_train<H = 2048>", out)
        self.assertIn("fusion rms_norm_grad<H = 2048>", out)
        self.assertIn("fusion rms_norm<H = 4096>", out)

    def test_same_gradient_items_name_no_fusion(self):
        # `grad_residual = grad_x` in the clause: the pairing still links the two fusions.
        text = ("fusion rms_norm_add_train<H = 4096>(x: bf16[T, H], residual: bf16[T, H]) -> (y: bf16[T, H])"
                " backward rms_norm_add_grad, grad_residual = grad_x {\n}\n"
                "fusion rms_norm_add_grad<H = 4096>(h: bf16[T, H]) -> (grad_x: bf16[T, H]) {\n}\n")
        self.assertEqual(tune.paired_fusions(text, "rms_norm_add_grad"),
                         {"rms_norm_add_grad", "rms_norm_add_train"})
        out = tune.with_static_sizes(text, "rms_norm_add_grad", {"H": 2048, "T": 64})
        self.assertIn("fusion rms_norm_add_train<H = 2048>", out)

    def test_a_fusion_without_static_sizes_gets_the_shapes_dimensions(self):
        # examples/matmul.fsl declares no sizes: its knobs must be checked at the shape.
        text = ("fusion matmul(a: bf16[M, K], w: bf16[N, K]) -> (y: bf16[M, N]) {\n"
                "    y = bf16(sum(f32(a) * f32(w), over K));\n}\n"
                "fusion other(x: f32[T]) -> (y: f32[T]) { y = x; }\n")
        out = tune.with_static_sizes(text, "matmul", {"M": 16, "N": 14336, "K": 5120, "T": 3})
        self.assertIn("fusion matmul<M = 16, K = 5120, N = 14336>(a: bf16[M, K]", out)
        self.assertIn("fusion other(x: f32[T])", out)

    def test_a_fusion_without_the_shapes_dimensions_is_unchanged(self):
        text = "fusion f(x: f32[T]) -> (y: f32[T]) { y = x; }"
        self.assertEqual(tune.with_static_sizes(text, "f", {"H": 8}), text)


class Compare(unittest.TestCase):
    def document(self, *results):
        return {"fusion": "matmul", "kind": "matmul", "target": "h200", "results": list(results)}

    def run_compare(self, first, second):
        paths = []
        for index, document in enumerate((first, second)):
            paths.append(os.path.join(WORK or ".", "compare-%d.json" % index))
            with open(paths[-1], "w") as f:
                json.dump(document, f)
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = tune.main(["compare"] + paths)
        return code, out.getvalue()

    def test_the_same_winner_agrees(self):
        first = self.document(result(0, 1.0, knobs={}, heuristics=True), result(1, 0.9, knobs={"stages": 3}))
        second = self.document(result(5, 1.01, knobs={}, heuristics=True), result(6, 0.92, knobs={"stages": 3}))
        code, out = self.run_compare(first, second)
        self.assertEqual(code, 0)
        self.assertIn('K=5120,M=4096,N=14336: agree: the same winner {"stages": 3}', out)
        self.assertIn("1 of 1 shapes agree", out)

    def test_a_tie_within_two_percent_agrees(self):
        first = self.document(result(0, 1.0, knobs={}, heuristics=True), result(1, 0.90, knobs={"stages": 3}),
                              result(2, 0.91, knobs={"tile_n": 128}))
        second = self.document(result(0, 1.0, knobs={}, heuristics=True), result(1, 0.91, knobs={"stages": 3}),
                               result(2, 0.90, knobs={"tile_n": 128}))
        code, out = self.run_compare(first, second)
        self.assertEqual(code, 0)
        self.assertIn("agree: a tie: winners", out)

    def test_different_winners_apart_disagree(self):
        first = self.document(result(0, 1.0, knobs={}, heuristics=True), result(1, 0.80, knobs={"stages": 3}),
                              result(2, 0.90, knobs={"tile_n": 128}), result(3, 0.5, shape=SMALL))
        second = self.document(result(0, 1.0, knobs={}, heuristics=True), result(1, 0.90, knobs={"stages": 3}),
                               result(2, 0.80, knobs={"tile_n": 128}), result(3, 0.5, shape=SMALL))
        code, out = self.run_compare(first, second)
        self.assertEqual(code, 1)
        self.assertIn("K=5120,M=4096,N=14336: DISAGREE: winners", out)
        self.assertIn("+12.5 %, +12.5 %", out)
        self.assertIn("K=4096,M=64,N=4096: agree", out)
        self.assertIn("1 of 2 shapes agree", out)

    def test_a_winner_not_confirmed_in_the_other_run_is_compared_by_screening_times(self):
        # Run F and run B of the fused product at 8192^3 (H100): the second run confirmed the
        # heuristics' candidate (1.58 ms, screened 1.386) and another; the first run's winner
        # (swizzle 16) it only screened, at 1.378 ms: 0.6 % faster than the heuristics'
        # screening time, not 12.8 % faster than its confirmed time. The first run put the
        # heuristics' 2.2 % behind its winner: the runs disagree, by 2.2 %.
        def confirmed(r, screen_ms, confirm_ms):
            r.update(screen_ms=screen_ms, time_ms=statistics.median(confirm_ms), confirm_ms=confirm_ms)
            return r
        first = self.document(confirmed(result(0, None, knobs={}, heuristics=True), 1.39, [1.61] * 4),
                              confirmed(result(1, None, knobs={"swizzle": 16}), 1.37, [1.575] * 4))
        second = self.document(confirmed(result(0, None, knobs={}, heuristics=True), 1.386, [1.58] * 4),
                               confirmed(result(1, None, knobs={"stages": 3}), 1.378, [1.57] * 4),
                               result(2, 1.378, knobs={"swizzle": 16}))
        code, out = self.run_compare(first, second)
        self.assertEqual(code, 1, out)
        self.assertIn('winners {"swizzle": 16} (1.5750 ms) and {} (1.5800 ms); '
                      "the other's winner +2.2 %, -0.6 %", out)

    def test_a_winner_missing_from_the_other_run_disagrees(self):
        first = self.document(result(0, 1.0, knobs={}, heuristics=True), result(1, 0.90, knobs={"stages": 3}))
        second = self.document(result(0, 0.9, knobs={}, heuristics=True),
                               result(1, None, knobs={"stages": 3}, status="launch-error"))
        code, out = self.run_compare(first, second)
        self.assertEqual(code, 1)
        self.assertIn("not timed", out)
        first = self.document(result(0, None, knobs={}, heuristics=True, status="compile-error"))
        code, out = self.run_compare(first, second)
        self.assertEqual(code, 1)
        self.assertIn("no winner in the first run", out)


class Pairs(unittest.TestCase):
    def test_the_fastest_single_knobs_that_ran(self):
        results = [result(0, 1.0, knobs={}, heuristics=True), result(1, 0.9, knobs={"stages": 3}),
                   result(2, 0.8, knobs={"tile_n": 128}), result(3, 0.5, knobs={"swizzle": 4}, status="mismatch"),
                   result(4, 0.95, knobs={"pingpong": False}), result(5, 0.7, knobs={"tile_n": 192, "stages": 3})]
        self.assertEqual(tune.fastest_single_knobs(results, 2), [("tile_n", 128), ("stages", 3)])
        self.assertEqual(tune.fastest_single_knobs(results, 5), [("tile_n", 128), ("stages", 3), ("pingpong", False)])

    def test_a_pair_is_timed_when_both_knobs_were_selected(self):
        selected = [("tile_n", 128), ("stages", 3)]
        self.assertTrue(tune.is_paired({"knobs": {"tile_n": 128, "stages": 3}}, selected))
        self.assertFalse(tune.is_paired({"knobs": {"tile_n": 128, "stages": 4}}, selected))
        self.assertFalse(tune.is_paired({"knobs": {"tile_n": 192, "swizzle": 8}}, selected))

    def test_timing_order(self):
        candidates = [{"id": 3, "round": 2}, {"id": 1, "round": 1}, {"id": 0, "round": 1, "heuristics": True},
                      {"id": 2}]
        self.assertEqual([c["id"] for c in tune.timing_order(candidates)], [0, 1, 2, 3])

    def test_timing_order_by_the_cost_models_estimate(self):
        # Within a round the lower estimate first (a tight budget skips the slowest
        # estimated); the heuristics' candidate stays first whatever its estimate, the
        # pairs last, equal estimates in the manifest's order.
        candidates = [{"id": 0, "round": 1, "heuristics": True, "estimate_us": 30},
                      {"id": 1, "round": 1, "estimate_us": 40}, {"id": 2, "round": 1, "estimate_us": 20},
                      {"id": 3, "round": 1, "estimate_us": 20}, {"id": 4, "round": 2, "estimate_us": 10}]
        self.assertEqual([c["id"] for c in tune.timing_order(candidates)], [0, 2, 3, 1, 4])

    def test_the_budget_starts_after_the_heuristics_candidate(self):
        # The heuristics' candidate is never over budget, however long it took (it pays the
        # process's start); the clock runs from the first other candidate.
        now = [0.0]
        budget = tune.ShapeBudget(10.0, clock=lambda: now[0])
        now[0] = 0.0
        self.assertFalse(budget.exhausted({"heuristics": True}))
        now[0] = 30.0  # the first compilation and CUDA's start took 30 s
        self.assertFalse(budget.exhausted({"id": 1}))
        now[0] = 39.0
        self.assertFalse(budget.exhausted({"id": 2}))
        now[0] = 40.5
        self.assertTrue(budget.exhausted({"id": 3}))
        self.assertFalse(budget.exhausted({"heuristics": True}))


def row(id, time_ms, T, H, knobs=None, heuristics=False, status="ok"):
    return result(id, time_ms, shape={"T": T, "H": H}, knobs=knobs if knobs is not None else {},
                  heuristics=heuristics, status=status)


class Variants(unittest.TestCase):
    def test_one_winner_a_guard_by_the_geometric_mean(self):
        # H = 4096 at T = 1 and 1024: the guarded variant with no knob is faster in the geometric mean
        # (0.8 and 8.0 against 1.0 and 8.5), the vector width 4 is faster at T = 1 only and missed T = 1024.
        results = [row(0, 1.0, 1, 4096, heuristics=True), row(1, 0.8, 1, 4096), row(2, 0.5, 1, 4096, {"vector_width": 4}),
                   row(3, 8.5, 1024, 4096, heuristics=True), row(4, 8.0, 1024, 4096),
                   row(5, 7.0, 1024, 4096, {"vector_width": 4}, status="mismatch")]
        winners = tune.choose_variant_winners(results, [], ["H"])
        winner = winners["H=4096"]
        self.assertEqual((winner["guard"], winner["knobs"], winner["heuristics"]), ({"H": 4096}, {}, False))
        self.assertAlmostEqual(winner["time_ms"], (0.8 * 8.0) ** 0.5)
        self.assertAlmostEqual(winner["heuristics_ms"], (1.0 * 8.5) ** 0.5)
        self.assertEqual(winner["shapes"], ["H=4096,T=1", "H=4096,T=1024"])

    def test_a_duplicate_takes_its_twins_time(self):
        # At T = 1024 the vector width 4 came out as candidate 4's schedule: it has that time.
        results = [row(0, 1.0, 1, 4096, heuristics=True), row(1, 0.9, 1, 4096), row(2, 0.5, 1, 4096, {"vector_width": 4}),
                   row(3, 8.5, 1024, 4096, heuristics=True), row(4, 8.0, 1024, 4096)]
        duplicates = [{"shape": {"T": 1024, "H": 4096}, "knobs": {"vector_width": 4}, "same_as": 4}]
        winner = tune.choose_variant_winners(results, duplicates, ["H"])["H=4096"]
        self.assertEqual(winner["knobs"], {"vector_width": 4})
        self.assertAlmostEqual(winner["time_ms"], (0.5 * 8.0) ** 0.5)

    def test_the_heuristics_variants_within_the_tie_stay_and_need_no_entry(self):
        results = [row(0, 1.0, 1, 8192, heuristics=True), row(1, 0.99, 1, 8192),
                   row(2, 1.0, 1, 4096, heuristics=True), row(3, 0.9, 1, 4096, {"vector_width": 4})]
        document = {"fusion": "rms", "kind": "inner_persistent", "target": "h200", "variants": ["H"],
                    "machine": {"gpu": "NVIDIA H200", "driver": "12.6", "date": "2026-12-02"},
                    "peers": {"H=4096,T=1": {"eager": 2.0}}, "results": results, "duplicates": []}
        self.assertTrue(tune.choose_variant_winners(results, [], ["H"])["H=8192"]["heuristics"])
        text = tune.record(document, "")
        self.assertEqual(text, "// target: h200\n// measured: 0.9000 ms (geomean of 1 shape: T=1; median of 5 rounds "
                               "each); heuristics' variants 1.0000 ms (-10.0 %); peer eager 2.0000 ms; NVIDIA H200, "
                               "driver 12.6; 2026-12-02\nschedule rms when H == 4096 = auto(inner_persistent) {\n"
                               "    vector_width = 4;\n}\n")
        self.assertEqual(tune.record(dict(document, results=results[:2]), "// kept\n"), "// kept\n")


class Checkpoints(unittest.TestCase):
    """A run stopped early (a time limit on the GPU machine) keeps the shapes it finished:
    `run` hands each partial document to its checkpoint, the command writes it whole, and
    `record` records those shapes, saying that the run stopped."""

    DOCUMENT = {"fusion": "matmul", "kind": "matmul", "target": "h200",
                "machine": {"gpu": "NVIDIA H200", "driver": "12.6", "date": "2026-12-02"},
                "peers": {}, "duplicates": [], "complete": False,
                "results": [result(0, 1.0, knobs={}, heuristics=True), result(1, 0.9, knobs={"tile_n": 128})]}

    def test_the_document_is_written_whole(self):
        path = os.path.join(WORK or ".", "checkpoint.json")
        tune.write_json(path, self.DOCUMENT)
        tune.write_json(path, dict(self.DOCUMENT, complete=True))
        with open(path) as f:
            self.assertTrue(json.load(f)["complete"])
        self.assertFalse(os.path.exists(path + ".partial"))

    def test_results_document(self):
        manifest = {"fusion": "rms", "kind": "inner_persistent", "target": "h200", "variants": ["H"],
                    "duplicates": [{"same_as": 0}]}
        document = tune.results_document(manifest, {"gpu": "g"}, {"k": {}}, [], complete=False)
        self.assertEqual(document["complete"], False)
        self.assertEqual(document["variants"], ["H"])
        self.assertEqual(document["duplicates"], [{"same_as": 0}])
        self.assertNotIn("variants", tune.results_document(dict(manifest, variants=None), {}, {}, [], True))

    def test_record_of_a_partial_run_records_its_shapes_and_says_so(self):
        import contextlib
        import io
        path = os.path.join(WORK or ".", "partial-results.json")
        tune.write_json(path, self.DOCUMENT)
        database = os.path.join(WORK or ".", "partial.fsl")
        if os.path.exists(database):
            os.remove(database)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.assertEqual(tune.main(["record", path, "-o", database]), 0)
        self.assertIn("holds the 1 shape(s) a run finished before it stopped", stderr.getvalue())
        with open(database) as f:
            self.assertIn("schedule matmul when K == 5120 && M == 4096 && N == 14336 = auto(matmul) {\n"
                          "    tile_n = 128;\n}", f.read())
        # A complete run says nothing.
        tune.write_json(path, dict(self.DOCUMENT, complete=True))
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            tune.main(["record", path, "-o", database])
        self.assertEqual(stderr.getvalue(), "")


class DatabaseText(unittest.TestCase):
    def test_entry(self):
        text = tune.entry_text("matmul", "matmul", "h200", SHAPE, {"tile_n": 224, "pingpong": False},
                               "measured: 1.0 ms")
        self.assertEqual(text, "// target: h200\n// measured: 1.0 ms\nschedule matmul when K == 5120 && "
                               "M == 4096 && N == 14336 = auto(matmul) {\n    pingpong = false;\n    tile_n = 224;\n}\n")
        self.assertTrue(tune.entry_text("m", "matmul", "h200", SHAPE, {}, "x").endswith("= auto(matmul);\n"))

    def test_measurement(self):
        winner, heuristics = result(1, 0.95), result(0, 1.0, knobs={}, heuristics=True)
        text = tune.measurement_text(winner, heuristics, {"cublas": 0.97},
                                     {"gpu": "NVIDIA H200", "driver": "12.6", "date": "2026-12-02"})
        self.assertEqual(text, "measured: 0.9500 ms (median of 5 rounds); heuristics 1.0000 ms (-5.0 %); "
                               "peer cublas 0.9700 ms; NVIDIA H200, driver 12.6; 2026-12-02")

    def test_update_replaces_the_same_key_and_appends_others(self):
        old = ("// The project's database.\n\n"
               "// target: h200\n// measured: 2.0 ms\nschedule matmul when M == 4096 && N == 14336 && K == 5120 = auto(matmul);\n\n"
               "// target: a100\nschedule matmul when K == 5120 && M == 4096 && N == 14336 = auto(matmul);\n")
        new = tune.entry_text("matmul", "matmul", "h200", SHAPE, {"stages": 4}, "measured: 1.0 ms")
        small = tune.entry_text("matmul", "matmul", "h200", SMALL, {}, "measured: 0.1 ms")
        updated = tune.update_database(old, [small])
        self.assertEqual(updated.count("schedule matmul"), 3)
        # The same guard written in another order is another key: as written, as fslc keys it.
        updated = tune.update_database(updated, [new])
        self.assertEqual(updated.count("schedule matmul"), 4)
        again = tune.update_database(updated, [tune.entry_text("matmul", "matmul", "h200", SHAPE, {"stages": 5},
                                                               "measured: 0.9 ms")])
        self.assertEqual(again.count("schedule matmul"), 4)
        self.assertIn("stages = 5", again)
        self.assertNotIn("stages = 4", again)
        self.assertTrue(again.startswith("// The project's database.\n\n"))
        self.assertIn("// target: a100", again)


class Report(unittest.TestCase):
    DOCUMENT = {
        "fusion": "matmul", "kind": "matmul", "target": "h200",
        "machine": {"gpu": "NVIDIA H200", "driver": "12.6", "date": "2026-12-02"},
        "roofline": {"peak_tflops": 989.0, "bandwidth_gbps": 4800.0},
        "peers": {"K=5120,M=4096,N=14336": {"cublas": 0.80}, "K=4096,M=64,N=4096": {"cublas": 0.020}},
        "results": [result(0, 0.85, knobs={}, heuristics=True), result(1, 0.78),
                    result(2, 0.10, status="mismatch"),
                    result(3, 0.025, shape=SMALL, knobs={}, heuristics=True), result(4, 0.0249, shape=SMALL)],
    }

    def parse(self, text):
        import xml.etree.ElementTree as ET
        root = ET.fromstring(text)
        svg = "{http://www.w3.org/2000/svg}"
        self.assertEqual(root.tag, svg + "svg")
        return {p.get("data-name"): p.get("points") for p in root.iter(svg + "polyline")
                if p.get("class") == "series"}, [p for p in root.iter(svg + "polyline") if p.get("class") == "roofline"]

    def test_one_series_an_implementation_and_the_roofline(self):
        files = report.plots(self.DOCUMENT)
        self.assertEqual(sorted(files), ["matmul-tflops.svg", "matmul-time.svg"])
        for text in files.values():
            series, roofline = self.parse(text)
            self.assertEqual(sorted(series), ["cublas", "fslc heuristics", "fslc tuned"])
            self.assertEqual(len(roofline), 1)
            for points in series.values():  # a point at each of the two shapes
                self.assertEqual(len(points.split()), 2)

    def test_tuned_is_the_winner_never_a_failure(self):
        series, _ = report.series_of(self.DOCUMENT)
        self.assertEqual(series["fslc tuned"], {"K=5120,M=4096,N=14336": 0.78, "K=4096,M=64,N=4096": 0.025})
        self.assertAlmostEqual(report.roofline_ms({"flops": 2.0 * 4096 * 14336 * 5120, "bytes": 1.0}, 989.0, 4800.0),
                               2.0 * 4096 * 14336 * 5120 / 989e12 * 1e3)

    def test_tuned_is_the_confirmed_winner_not_a_screening_time(self):
        # Run S37B (H100), the fused product at 4096 x 5120 x 14336: the confirmation round
        # had the heuristics' 0.8578 ms and swizzle 16's 0.8647 (screened 0.7504 and
        # 0.7440); a third candidate screened at 0.7455 is no "tuned" time beside them.
        heuristics = dict(result(0, 0.8578, knobs={}, heuristics=True), screen_ms=0.7504, confirm_ms=[0.8578] * 4)
        other = dict(result(1, 0.8647, knobs={"swizzle": 16}), screen_ms=0.7440, confirm_ms=[0.8647] * 4)
        screened = result(2, 0.7455, knobs={"epilogue_piece": 64})
        document = {"fusion": "linear_bias_gelu", "kind": "matmul", "results": [heuristics, other, screened]}
        series, shapes = report.series_of(document)
        self.assertEqual(series["fslc tuned"], {"K=5120,M=4096,N=14336": 0.8578})
        self.assertEqual(series["fslc heuristics"], {"K=5120,M=4096,N=14336": 0.8578})
        self.assertIn("K=5120,M=4096,N=14336", shapes)

    def test_tuned_for_variants_is_the_guards_winner_at_each_shape(self):
        # A --variants run at H = 4096, T = 1 and 1024: the guard's winner (no knob, 0.8 and
        # 8.0 ms; geometric mean below the heuristics' 1.0 and 8.5) is what `record` writes
        # and what the plot draws at both T, not the vector width 4 that was fastest at T = 1
        # alone (0.5 ms) and failed at T = 1024.
        results = [row(0, 1.0, 1, 4096, heuristics=True), row(1, 0.8, 1, 4096), row(2, 0.5, 1, 4096, {"vector_width": 4}),
                   row(3, 8.5, 1024, 4096, heuristics=True), row(4, 8.0, 1024, 4096),
                   row(5, 7.0, 1024, 4096, {"vector_width": 4}, status="mismatch")]
        document = {"fusion": "rms_norm", "kind": "inner_persistent", "variants": ["H"], "results": results}
        series, _ = report.series_of(document)
        self.assertEqual(series["fslc tuned"], {"H=4096,T=1": 0.8, "H=4096,T=1024": 8.0})
        self.assertEqual(series["fslc heuristics"], {"H=4096,T=1": 1.0, "H=4096,T=1024": 8.5})

    def test_without_work_only_time(self):
        document = dict(self.DOCUMENT, kind="inner_persistent", roofline={})
        files = report.plots(document)
        self.assertEqual(sorted(files), ["matmul-time.svg"])
        _, roofline = self.parse(files["matmul-time.svg"])
        self.assertEqual(roofline, [])

    def test_command(self):
        path = os.path.join(WORK or ".", "report-input.json")
        with open(path, "w") as f:
            json.dump(self.DOCUMENT, f)
        out = os.path.join(WORK or ".", "plots")
        report.main([path, "-o", out])
        self.assertTrue(os.path.exists(os.path.join(out, "matmul-tflops.svg")))


@unittest.skipUnless(FSLC, "needs fslc")
class EndToEnd(unittest.TestCase):
    def test_tune_record_and_compile(self):
        source = os.path.join(REPO, "tests", "lit", "tune", "Inputs", "matmul.fsl")
        out = os.path.join(WORK, "candidates")
        subprocess.run([FSLC, "tune", source, "--fusion", "matmul", "--shapes",
                        "M=4096,N=14336,K=5120;M=64,N=4096,K=4096", "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        # A fake measurement: tile_n = 128 fastest at the large shape, a mismatch faster still
        # (never chosen); at the small shape nothing beats the heuristics by 2 %.
        results = []
        for candidate in manifest["candidates"]:
            r = {"id": candidate["id"], "shape": candidate["shape"], "knobs": candidate["knobs"],
                 "heuristics": candidate["heuristics"], "status": "ok", "time_ms": 1.0, "rounds_ms": [1.0]}
            if candidate["shape"]["M"] == 4096 and candidate["knobs"] == {"tile_n": 128}:
                r["time_ms"] = 0.9
            if candidate["shape"]["M"] == 4096 and candidate["knobs"] == {"tile_n": 192}:
                r.update(status="mismatch", time_ms=0.5)
            if candidate["shape"]["M"] == 64 and not candidate["heuristics"]:
                r["time_ms"] = 0.99
            results.append(r)
        document = {"fusion": manifest["fusion"], "kind": manifest["kind"], "target": manifest["target"],
                    "machine": {"gpu": "NVIDIA H200", "driver": "12.6", "date": "2026-12-02"},
                    "peers": {}, "results": results}
        results_path = os.path.join(WORK, "results.json")
        with open(results_path, "w") as f:
            json.dump(document, f)
        database = os.path.join(WORK, "tuned.fsl")
        if os.path.exists(database):
            os.remove(database)
        tune.main(["record", results_path, "-o", database])
        with open(database) as f:
            text = f.read()
        self.assertIn("schedule matmul when K == 5120 && M == 4096 && N == 14336 = auto(matmul) {\n    tile_n = 128;\n}",
                      text)
        self.assertIn("schedule matmul when K == 4096 && M == 64 && N == 4096 = auto(matmul);", text)
        self.assertNotIn("tile_n = 192", text)
        # Recording twice changes nothing.
        tune.main(["record", results_path, "-o", database])
        with open(database) as f:
            self.assertEqual(f.read(), text)
        # fslc reads it back: the large shape takes the 128-wide tiles under its guard.
        printed = subprocess.run([FSLC, "--emit=schedule", "--tuning-db", database, source], check=True,
                                 capture_output=True, text=True).stdout
        self.assertIn("// from the tuning database %s:" % database, printed)
        block = printed.split("schedule matmul when K == 5120 && M == 4096 && N == 14336 {", 1)[1].split("}")[0]
        self.assertIn("tile (128, 128, 64)", block)


@unittest.skipUnless(FSLC, "needs fslc")
class PairsRound(unittest.TestCase):
    def test_the_manifest_holds_both_rounds(self):
        source = os.path.join(REPO, "tests", "lit", "tune", "Inputs", "rms.fsl")
        out = os.path.join(WORK, "pairs")
        subprocess.run([FSLC, "tune", source, "--fusion", "rms", "--shapes", "T=4096,H=4096", "--pairs", "2",
                        "-o", out], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["pairs"], 2)
        first = [c for c in manifest["candidates"] if c["round"] == 1]
        second = [c for c in manifest["candidates"] if c["round"] == 2]
        self.assertTrue(all(len(c["knobs"]) <= 1 for c in first))
        self.assertTrue(second and all(len(c["knobs"]) == 2 for c in second))
        # The two fastest single knobs (a fake measurement) select the pairs the runner times:
        # those that combine exactly them, and nothing else.
        singles = [c for c in first if c["knobs"]]
        timed = [dict(c, status="ok", time_ms=1.0 - 0.01 * index) for index, c in enumerate(singles)]
        selected = tune.fastest_single_knobs(timed, manifest["pairs"])
        self.assertEqual(len(selected), 2)
        chosen = [c for c in second if tune.is_paired(c, selected)]
        for c in chosen:
            self.assertEqual(sorted(c["knobs"].items()), sorted(selected))
        self.assertLessEqual(len(chosen), 1)


@unittest.skipUnless(FSLC, "needs fslc")
class VariantsEndToEnd(unittest.TestCase):
    def test_tune_record_and_compile_variants(self):
        source = os.path.join(REPO, "tests", "lit", "tune", "Inputs", "rms-runtime.fsl")
        out = os.path.join(WORK, "variants")
        subprocess.run([FSLC, "tune", source, "--fusion", "rms", "--shapes", "T=1,H=4096;T=1024,H=4096;T=1,H=8192",
                        "--variants", "H", "-o", out], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["variants"], ["H"])
        # The guard pins H: every knob is planned at the static size, none is refused as
        # needing one (one_pass is refused: RMSNorm has no pair of reductions; grid_sync =
        # true: a row of 512 or 1024 vectors is one block's work).
        self.assertFalse([p for p in manifest["pruned"] if "runtime size" in p["reason"]])
        self.assertEqual({tuple(p["knobs"]) for p in manifest["pruned"]}, {("one_pass",), ("grid_sync",)})
        for h in (4096, 8192):
            knobbed = [c for c in manifest["candidates"] if c["shape"]["H"] == h and c["knobs"]]
            self.assertTrue(knobbed and all(c["guard"] == "H == %d" % h for c in knobbed))
        batch2 = [c for c in manifest["candidates"]
                  if c["shape"] == {"H": 4096, "T": 1} and c["knobs"] == {"persistent_batch": 2}]
        self.assertEqual(len(batch2), 1)
        self.assertIn("schedule rms when H == 4096 {\n    split H by 8 -> (Ho, Hv);  // Ho: 512, Hv: 8\n"
                      "    split Ho by 256 -> (Hp, Hx);  // Hp: 2, Hx: 256", batch2[0]["schedule"])
        # A fake measurement: at H = 4096 the variant with persistent_batch = 2 beats the
        # heuristics' own variants by 20 % (the other candidates by 10 %), at H = 8192 every
        # variant by 1 % (a tie: no entry).
        results = []
        for c in manifest["candidates"]:
            fast = 0.99
            if c["shape"]["H"] == 4096:
                fast = 0.8 if c["knobs"] == {"persistent_batch": 2} else 0.9
            results.append({"id": c["id"], "shape": c["shape"], "knobs": c["knobs"], "heuristics": c["heuristics"],
                            "status": "ok", "time_ms": 1.0 if c["heuristics"] else fast, "rounds_ms": [1.0] * 5})
            self.assertEqual(c.get("guard"), None if c["heuristics"] else "H == %d" % c["shape"]["H"])
        document = {"fusion": "rms", "kind": manifest["kind"], "target": manifest["target"], "variants": ["H"],
                    "machine": {"gpu": "NVIDIA H200"}, "peers": {}, "results": results,
                    "duplicates": manifest["duplicates"]}
        results_path = os.path.join(WORK, "variant-results.json")
        with open(results_path, "w") as f:
            json.dump(document, f)
        database = os.path.join(WORK, "variants.fsl")
        if os.path.exists(database):
            os.remove(database)
        tune.main(["record", results_path, "-o", database])
        with open(database) as f:
            text = f.read()
        self.assertIn("schedule rms when H == 4096 = auto(inner_persistent) {\n    persistent_batch = 2;\n}", text)
        self.assertNotIn("H == 8192", text)
        printed = subprocess.run([FSLC, "--emit=schedule", "--tuning-db", database, source], check=True,
                                 capture_output=True, text=True).stdout
        self.assertIn("// from the tuning database %s:" % database, printed)
        self.assertIn("schedule rms when H == 4096 {\n    split H by 8 -> (Ho, Hv);  // Ho: 512, Hv: 8\n"
                      "    split Ho by 256 -> (Hp, Hx);  // Hp: 2, Hx: 256", printed)
        self.assertIn("H != 4096 {", printed)  # the heuristics' variants, cut around the entry
        simulated = subprocess.run([FSLC, "--simulate", "T=2,H=4096", "--tuning-db", database, source], check=True,
                                   capture_output=True, text=True).stdout
        self.assertIn("simulate rms (rms_v0): T=2, H=4096", simulated)
        self.assertIn("matches the float64 reference", simulated)


if __name__ == "__main__":
    if WORK:
        os.makedirs(WORK, exist_ok=True)
    tune = load_module("tune")
    report = load_module("report")
    unittest.main(argv=[sys.argv[0]], verbosity=1)
