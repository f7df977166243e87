"""The Python package's C API layer (python/fslc) without torch and without a GPU.

usage: python3 tests/python/test_capi.py LIBFSL SOURCE_DIR WORK_DIR
       python3 tests/python/test_capi.py --installed SOURCE_DIR WORK_DIR

The first form imports the source tree's package (SOURCE_DIR/python) with the build's
libfsl.so; the second the fslc package the interpreter has installed (a wheel in a
venv, tests/python/wheel_test.py) with the libfsl.so, fslc and stdlib it carries, and
checks that nothing comes from SOURCE_DIR but the .fsl files loaded.

libfsl.so's fsl_jit_session_prepare compiles with NVRTC for an explicit architecture and
checks the call without data (null data pointers): stdlib/std/norms.fsl with H runtime,
rms_norm_add at H = 4096 and 7168, the cache files, a memory hit, launch shapes, and the
refusals as the Python exceptions of fslc.errors with the C API's messages.
"""

import os
import shutil
import subprocess
import sys
import unittest

INSTALLED = sys.argv[1] == "--installed"
ROOT, WORK = (os.path.abspath(a) for a in sys.argv[2:4])
if not INSTALLED:
    sys.path.insert(0, os.path.join(ROOT, "python"))
import fslc  # noqa: E402

PACKAGE = os.path.dirname(os.path.abspath(fslc.__file__))
# Installed: the package's own libfsl.so, which its lookup finds first.
LIBRARY = os.path.join(PACKAGE, "lib", "libfsl.so") if INSTALLED else os.path.abspath(sys.argv[1])
STDLIB = os.path.join(ROOT, "stdlib")
NORMS = os.path.join(STDLIB, "std", "norms.fsl")
QK_NORM = os.path.join(ROOT, "stdlib", "std", "qk_norm.fsl")
CACHE = os.path.join(WORK, "cache")


def bf16(*shape):
    return fslc.descriptor(shape, "bf16")


def rms_norm_add_call(T, H):
    """rms_norm_add's descriptors: x, residual, weight, y (T x H, H; null data)."""
    return [bf16(T, H), bf16(T, H), bf16(H), bf16(T, H)]


class CapiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.prog = fslc.load(NORMS, runtime_dims="H", arch="sm_90a", cache_dir=CACHE,
                            library=LIBRARY, torch_ops=False)

    def test_00_import_needs_no_torch(self):
        self.assertNotIn("torch", sys.modules, "importing fslc or loading a program imported torch")

    def test_01_program(self):
        prog = self.prog
        self.assertEqual(list(prog.fusions), ['rms_norm', 'rms_norm_add', 'layer_norm', 'softmax', 'rms_norm_train', 'rms_norm_backward', 'rms_norm_backward_weight', 'rms_norm_grad', 'rms_norm_add_train', 'rms_norm_add_backward', 'rms_norm_add_backward_weight', 'rms_norm_add_grad', 'layer_norm_train', 'layer_norm_backward', 'layer_norm_backward_weight', 'layer_norm_grad', 'softmax_backward'])
        self.assertEqual((prog.arch, prog.target), ("sm_90a", "h200"))
        self.assertIs(prog.rms_norm_add, prog["rms_norm_add"])
        sig = prog.rms_norm_add.signature
        self.assertEqual(sig.dims, {"T": None, "H": None})
        self.assertEqual(sig.reduced, ["H"])
        self.assertEqual([(p.name, p.role) for p in sig.tensors],
                         [("x", "in"), ("residual", "inout"), ("weight", "in"), ("y", "out")])
        self.assertEqual([(p.name, p.dtype, p.default) for p in sig.scalars], [("eps", "f32", 1e-6)])
        self.assertEqual([p.name for p in sig.inputs], ["x", "residual", "weight", "eps"])
        self.assertEqual([p.name for p in sig.inout], ["residual"])
        self.assertEqual(sig.specialized_dims("reduced"), ["H"])
        self.assertEqual(sig.specialized_dims("all"), ["T", "H"])
        self.assertEqual(sig.specialized_dims("none"), [])
        # softmax keeps its static S = 4096 (only H was made runtime).
        self.assertEqual(prog.softmax.signature.dims, {"T": None, "S": 4096})

    def test_02_op_schema(self):
        self.assertEqual(self.prog.rms_norm_add.signature.op_schema(),
                         "(Tensor x, Tensor(a!) residual, Tensor weight, float eps=1e-06) -> Tensor")
        self.assertEqual(self.prog.softmax.signature.op_schema(), "(Tensor x) -> Tensor")
        sig = fslc.Signature(
            "fsl-launch 1\nfusion f\ndim N runtime\ntensor a f32 inout 0 N\nscalar k i32 3\n"
            "tensor b f32 inout 0 N\nscalar on bool 1\ntensor y f32 out 0 N\ntensor z f32 out 0 N\nend\n")
        # k's default comes before b, which has none: dropped.
        self.assertEqual(sig.op_schema(),
                         "(Tensor(a!) a, int k, Tensor(b!) b, bool on=True) -> (Tensor, Tensor)")

    def test_03_specialize_and_cache(self):
        f = self.prog.rms_norm_add
        before = self.prog.stats()
        paths = {}
        for H in (4096, 7168):
            info = f.prepare(rms_norm_add_call(8, H))
            self.assertEqual(info["specialization"], "rms_norm_add.H%d" % H)
            self.assertFalse(info["memory_hit"])
            self.assertTrue(os.path.isfile(info["cache_path"]), info["cache_path"])
            self.assertTrue(os.path.basename(info["cache_path"]).startswith("rms_norm_add_H%d-" % H))
            self.assertEqual(os.path.dirname(info["cache_path"]), CACHE)
            (launch,) = info["launches"]
            # Fewer rows than a wave of its blocks: the first variant, one block per row, a
            # plausible block and shared size.
            self.assertEqual(launch["kernel"], "rms_norm_add_v0")
            self.assertEqual(launch["grid"], (8, 1, 1))
            block = launch["block"]
            self.assertTrue(32 <= block[0] <= 1024 and block[0] % 32 == 0 and block[1:] == (1, 1), block)
            self.assertTrue(0 <= launch["shared_bytes"] <= 227 * 1024, launch)
            paths[H] = info["cache_path"]
        self.assertNotEqual(paths[4096], paths[7168])
        self.assertEqual(sorted(os.listdir(CACHE)), sorted(os.path.basename(p) for p in paths.values()))
        # Another T, the same H: a memory hit, the launcher's second variant on T blocks.
        info = f.prepare(rms_norm_add_call(2000, 4096))
        self.assertTrue(info["memory_hit"])
        self.assertEqual(info["specialization"], "rms_norm_add.H4096")
        self.assertEqual(info["launches"][0]["kernel"], "rms_norm_add_v1")
        self.assertEqual(info["launches"][0]["grid"], (2000, 1, 1))
        info = f.prepare(rms_norm_add_call(8, 7168), scalars=[1e-5])
        self.assertTrue(info["memory_hit"])
        self.assertEqual(info["cache_path"], paths[7168])
        stats = self.prog.stats()
        self.assertEqual(stats["specializations"] - before["specializations"], 2)
        self.assertEqual(stats["nvrtc_compiles"] - before["nvrtc_compiles"], 2)
        self.assertEqual(stats["memory_hits"] - before["memory_hits"], 2)
        self.assertEqual(stats["launches"], 0)
        # T = 0: nothing to do.
        self.assertEqual(f.prepare(rms_norm_add_call(0, 4096))["launches"], [])

    def test_04_specialize_source(self):
        name, source, launch = self.prog.specialize("rms_norm_add", H=7168)
        self.assertEqual(name, "rms_norm_add.H7168")
        self.assertIn("T_i * 7168 +", source)
        self.assertIn("dim H static 7168", launch)

    def test_04a_tuning_database(self):
        # Without tuning_db=, a file of the stdlib's std/ folder takes the stdlib's database
        # for the target, any other file none (beyond fsl.toml's); "auto" is the stdlib's
        # database for any file; an entry of a database is the specialization's schedule at
        # its sizes.
        # (The stdlib is the package's own: with an installed wheel, its copy, so that the
        # repository's norms.fsl is a file like any other there.)
        shipped_db = os.path.join(self.prog.stdlib, "tuning", "h200.fsl")
        own = os.path.join(self.prog.stdlib, "std", "norms.fsl")
        in_own = os.path.realpath(NORMS) == os.path.realpath(own)
        self.assertEqual(self.prog.tuning_db, shipped_db if in_own else None)
        copy = os.path.join(WORK, "norms_copy.fsl")
        with open(NORMS) as f, open(copy, "w") as g:
            g.write(f.read())  # the same fusions, outside the stdlib
        db = os.path.join(WORK, "tuned.fsl")
        with open(db, "w") as f:
            f.write("// target: h200\nschedule rms_norm_add when H == 4096 = "
                    "auto(inner_persistent) { vector_width = 4; }\n")
        options = dict(runtime_dims="H", arch="sm_90a", cache_dir=CACHE, library=LIBRARY,
                       torch_ops=False)
        self.assertIsNone(fslc.load(copy, **options).tuning_db)
        self.assertEqual(fslc.load(own, **options).tuning_db, shipped_db)
        tuned = fslc.load(NORMS, tuning_db=db, **options)
        plain = fslc.load(NORMS, tuning_db="", **options)
        self.assertEqual(tuned.tuning_db, db)
        self.assertEqual(plain.tuning_db, "")
        self.assertNotEqual(tuned.specialize("rms_norm_add", H=4096)[1],
                            plain.specialize("rms_norm_add", H=4096)[1])
        self.assertEqual(tuned.specialize("rms_norm_add", H=7168)[1],
                         plain.specialize("rms_norm_add", H=7168)[1])
        self.assertRefused(fslc.FslArgumentError, "cannot read", fslc.load, NORMS,
                           tuning_db=os.path.join(WORK, "missing.fsl"), **options)
        self.assertEqual(fslc.load(NORMS, tuning_db="", **options).tuning_db, "")
        shipped = fslc.load(NORMS, tuning_db="auto", **options)
        self.assertEqual(shipped.tuning_db, os.path.join(shipped.stdlib, "tuning", "h200.fsl"))
        # The shipped entry `rms_norm when H == 12288`, with T left runtime: the static
        # size's kernels, their variants by T under it; a size without an entry keeps the
        # heuristics'.
        source = shipped.specialize("rms_norm", H=12288)[1]
        self.assertIn("schedule of rms_norm when T < 132 (", source)
        self.assertRegex(source, r"when T >= 132 \([^)]*tuning/h200\.fsl:\d+\)")
        self.assertNotIn("h200.fsl", shipped.specialize("rms_norm", H=1000)[1])
        # "auto" is the database of the program's target: the H100's for target h100-sxm,
        # whose entry for rms_norm_grad at H = 4096, T = 16384 is a variant of its own; none
        # for the A100.
        h100 = fslc.load(NORMS, tuning_db="auto", target="h100-sxm", **options)
        self.assertEqual(h100.tuning_db, os.path.join(h100.stdlib, "tuning", "h100-sxm.fsl"))
        self.assertRegex(h100.specialize("rms_norm_grad", H=4096)[1],
                         r"schedule of rms_norm_grad when T == 16384 \([^)]*tuning/h100-sxm\.fsl:\d+\)")
        self.assertNotIn("h100-sxm.fsl", h100.specialize("rms_norm", H=12288)[1])
        self.assertIsNone(fslc.load(NORMS, tuning_db="auto", target="a100", arch="sm_80",
                                    **{k: v for k, v in options.items() if k != "arch"}).tuning_db)

    def assertRefused(self, cls, message, call, *args, **kwargs):
        with self.assertRaises(cls) as caught:
            call(*args, **kwargs)
        self.assertIn(message, str(caught.exception))
        self.assertIsInstance(caught.exception, fslc.FslError)
        return caught.exception

    def test_05_refusals(self):
        f = self.prog.rms_norm_add
        before = self.prog.stats()

        def damaged(change):
            call = rms_norm_add_call(8, 4096)
            change(call)
            return call

        e = self.assertRefused(fslc.FslDtypeError, "weight: dtype f32, expected bf16", f.prepare,
                               damaged(lambda c: c.__setitem__(2, fslc.descriptor((4096,), "f32"))))
        self.assertIsInstance(e, TypeError)
        self.assertEqual(e.status, 2)
        e = self.assertRefused(fslc.FslRankError, "x: rank 1, expected 2", f.prepare,
                               damaged(lambda c: c.__setitem__(0, bf16(4096))))
        self.assertIsInstance(e, ValueError)
        e = self.assertRefused(fslc.FslSizeError, "residual: size 9 of dimension T, expected 8",
                               f.prepare, damaged(lambda c: c.__setitem__(1, bf16(9, 4096))))
        self.assertIsInstance(e, ValueError)
        self.assertRefused(fslc.FslSizeError, "weight: size 5120 of dimension H, expected 4096",
                           f.prepare, damaged(lambda c: c.__setitem__(2, bf16(5120))))
        self.assertRefused(fslc.FslLayoutError, "x: stride 8 in dimension 1, expected 1", f.prepare,
                           damaged(lambda c: c.__setitem__(0, fslc.descriptor((8, 4096), "bf16", strides=(1, 8)))))
        self.assertRefused(fslc.FslNullPointerError, "y: null tensor descriptor", f.prepare,
                           damaged(lambda c: c.__setitem__(3, None)))
        self.assertRefused(fslc.FslArgumentError, "rms_norm_add takes 4 tensors (x, residual, weight, y), given 3",
                           f.prepare, rms_norm_add_call(8, 4096)[:3])
        self.assertRefused(fslc.FslArgumentError, "at most 1 scalars", f.prepare,
                           rms_norm_add_call(8, 4096), scalars=[1e-5, 1.0])
        stats = self.prog.stats()
        self.assertEqual(stats["specializations"], before["specializations"])
        self.assertEqual(stats["refused"] - before["refused"], 8)

    def test_06_unknown_fusion(self):
        self.assertRefused(fslc.FslArgumentError, "no fusion 'nope' in %s (fusions: rms_norm, rms_norm_add, layer_norm, softmax, rms_norm_train, rms_norm_backward, rms_norm_backward_weight, rms_norm_grad, rms_norm_add_train, rms_norm_add_backward, rms_norm_add_backward_weight, rms_norm_add_grad, layer_norm_train, layer_norm_backward, layer_norm_backward_weight, layer_norm_grad, softmax_backward)" % NORMS,
                           lambda: self.prog["nope"])
        with self.assertRaises(AttributeError) as caught:
            self.prog.nope
        self.assertIn("no fusion 'nope'", str(caught.exception))
        self.assertFalse(hasattr(self.prog, "nope"))
        # The session's own refusal, through the C API.
        from fslc import _capi
        import ctypes
        lib, error = self.prog._lib, _capi.error_buffer()
        tensors = (ctypes.POINTER(_capi.Tensor) * 1)()
        status = lib.fsl_jit_session_prepare(self.prog._session, b"nope", tensors, 0, None, 0, None,
                                             error, len(error))
        self.assertRefused(fslc.FslArgumentError, "no fusion 'nope' in the program", _capi.check, status, error)
        self.assertRefused(fslc.FslArgumentError, "rms_norm_add has no dimension 'Q'",
                           self.prog.specialize, "rms_norm_add", Q=8)

    def test_07_load_errors(self):
        options = dict(arch="sm_90a", cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        self.assertRefused(fslc.FslArgumentError, "Q is not a static dimension", fslc.load, NORMS,
                           runtime_dims="Q", **options)
        self.assertRefused(fslc.FslArgumentError, "a runtime size already", fslc.load, NORMS,
                           runtime_dims="T", **options)
        e = self.assertRefused(fslc.FslCompileError, "broken.fsl:1:", fslc.load_text, "broken.fsl",
                               "fusion f(x: f32[N]) -> (y: f32[N]) { y = x + ; }", **options)
        self.assertEqual(e.status, 9)
        self.assertRefused(fslc.FslArgumentError, "cannot read", fslc.load, os.path.join(WORK, "missing.fsl"),
                           **options)
        self.assertRefused(fslc.FslArgumentError, "unknown specialization policy", fslc.load, NORMS,
                           policy="most", **options)
        missing = dict(options, library=os.path.join(WORK, "nowhere", "libfsl.so"))
        self.assertRefused(fslc.FslLibraryError, "nowhere/libfsl.so (library=): no such file", fslc.load,
                           NORMS, **missing)

    def test_08_auto_runtime_dims_and_policies(self):
        prog = fslc.load(NORMS, arch="sm_90a", cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        self.assertEqual(prog.runtime_dims, ["H", "S"])
        self.assertEqual(prog.softmax.signature.dims, {"T": None, "S": None})
        info = prog.softmax.prepare([bf16(4, 7168), bf16(4, 7168)])
        self.assertEqual(info["specialization"], "softmax.S7168")
        prog = fslc.load(NORMS, runtime_dims="H", policy="all", arch="sm_90a", cache_dir=CACHE,
                        library=LIBRARY, torch_ops=False)
        self.assertEqual(prog.rms_norm_add.prepare(rms_norm_add_call(8, 7168))["specialization"],
                         "rms_norm_add.H7168.T8")
        prog = fslc.load(NORMS, runtime_dims=None, arch="sm_90a", cache_dir=CACHE, library=LIBRARY,
                        torch_ops=False)
        self.assertEqual(prog.rms_norm.signature.dims, {"T": None, "H": 4096})
        self.assertRefused(fslc.FslSizeError, "expected 4096 (static)", prog.rms_norm.prepare,
                           [bf16(8, 7168), bf16(7168), bf16(8, 7168)])

    def test_08a_strided_parameter(self):
        # A strided parameter (std/qk_norm.fsl): q of qkv = [T, 3 * NH * D] at its strides; the
        # others contiguous.
        prog = fslc.load(QK_NORM, arch="sm_90a", cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        self.assertEqual(prog.runtime_dims, ["NH", "D"])
        x = prog.qk_norm.signature.tensors[0]
        self.assertEqual((x.strided, x.dims, repr(x)), (True, ("T", "NH", "D"), "x: strided bf16[T, NH, D]"))
        q = fslc.descriptor((4, 8, 128), "bf16", strides=(3 * 8 * 128, 128, 1))
        info = prog.qk_norm.prepare([q, bf16(128), bf16(4, 8, 128)])
        self.assertEqual(info["specialization"], "qk_norm.D128")
        wide = fslc.descriptor((4, 8, 128), "bf16", strides=(8 * 256, 256, 2))
        self.assertRefused(fslc.FslLayoutError, "x: stride 2 in dimension 2, expected 1 (a strided tensor's "
                           "innermost dimension is contiguous)", prog.qk_norm.prepare,
                           [wide, bf16(128), bf16(4, 8, 128)])
        self.assertRefused(fslc.FslLayoutError, "y: stride 1 in dimension 0, expected 1024 (contiguous row-major)",
                           prog.qk_norm.prepare,
                           [q, bf16(128), fslc.descriptor((4, 8, 128), "bf16", strides=(1, 128, 1))])

    def test_08b_closed(self):
        prog = fslc.load(NORMS, runtime_dims="H", arch="sm_90a", cache_dir=CACHE, library=LIBRARY,
                        torch_ops=False)
        fusion = prog.rms_norm_add
        prog.close()
        prog.close()
        self.assertRefused(fslc.FslError, "is closed", fusion.prepare, rms_norm_add_call(8, 4096))
        self.assertRefused(fslc.FslError, "is closed", prog.specialize, "rms_norm_add", H=8)

    def test_09_matmul(self):
        # Matrix products: specialized on K (the reduced dimension) and N (the output's
        # innermost), launched as their launcher launches them: the `when` variant, TMA
        # descriptors, workspaces, clusters.
        prog = fslc.load(os.path.join(ROOT, "examples", "matmul.fsl"), arch="sm_90a",
                        cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        matmul = prog.matmul
        info = matmul.prepare([bf16(1, 5120), bf16(14336, 5120), bf16(1, 14336)])
        self.assertEqual(info["specialization"], "matmul.K5120.N14336")
        # The dimensions a call's kernels are keyed by in Python (CUDA-graph capture's
        # first-call rule) are the session's: K and N, not M.
        self.assertEqual(sorted(matmul.signature.specialized_dims("reduced")), ["K", "N"])
        self.assertEqual([(l["kernel"], l["grid"], l["tensor_maps"], l["cluster"]) for l in info["launches"]],
                         [("matmul_v0", (224, 1, 1), 2, (1, 1, 1))])
        self.assertEqual(info["workspaces"], [])
        info = matmul.prepare([bf16(4096, 5120), bf16(14336, 5120), bf16(4096, 14336)])
        self.assertTrue(info["memory_hit"])
        self.assertEqual([(l["kernel"], l["grid"], l["tensor_maps"]) for l in info["launches"]],
                         [("matmul_v5", (132, 1, 1), 3)])
        # The launcher's refusals, as its exceptions: a misaligned a (TMA), a static K whose
        # rows TMA cannot step (the compiler's lowering-unsupported).
        base = 0x7F0000000000
        call = [fslc.descriptor((64, 5120), "bf16", data=base + 2),
                fslc.descriptor((4096, 5120), "bf16", data=base + (1 << 30)),
                fslc.descriptor((64, 4096), "bf16", data=base + (2 << 30))]
        self.assertRefused(fslc.FslAlignmentError, "a: data pointer 0x7f0000000002 is not aligned to 16 "
                           "bytes (TMA copies need 16-byte aligned tensors)", matmul.prepare, call)
        self.assertRefused(fslc.FslCompileError, "TMA needs a multiple of 16 bytes", matmul.prepare,
                           [bf16(64, 5124), bf16(4096, 5124), bf16(64, 4096)])

        inputs = os.path.join(ROOT, "tests", "lit", "matmul", "Inputs")
        split = fslc.load(os.path.join(inputs, "split-k.fsl"), arch="sm_90a", cache_dir=CACHE,
                         library=LIBRARY, torch_ops=False)
        info = split.linear.prepare([bf16(256, 5120), bf16(1024, 5120), bf16(1024), bf16(256, 1024)])
        self.assertEqual([(l["kernel"], l["grid"]) for l in info["launches"]],
                         [("linear_v0_zero", (1, 1, 1)), ("linear_v0", (2, 8, 3))])
        self.assertEqual(info["workspaces"], [{"name": "linear_v0_partials", "bytes": 3 * 16 * 128 * 128 * 4},
                                              {"name": "linear_v0_arrivals", "bytes": 16 * 4}])
        cluster = fslc.load(os.path.join(inputs, "cluster-example.fsl"), arch="sm_90a",
                           cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        info = cluster.linear_bias_gelu.prepare([bf16(4096, 5120), bf16(14336, 5120), bf16(14336),
                                                 bf16(4096, 14336)])
        (launch,) = info["launches"]
        self.assertEqual((launch["kernel"], launch["grid"], launch["cluster"], launch["grid_from_occupancy"]),
                         ("linear_bias_gelu_v0", (132, 1, 1), (2, 1, 1), True))
        self.assertEqual(prog.stats()["launches"], 0)

    def test_09b_grid_sync(self):
        # grid_sync: one cooperative launch where the inner-outer form had two (the JIT
        # launches it with the cooperative attribute).
        text = """fusion rms_norm_backward<H = 2048>(dy: bf16[T, H], x: bf16[T, H], weight: bf16[H], rstd: f32[T])
    -> (dx: bf16[T, H], dweight: bf16[H]) {
  let xf = f32(x);
  let g = f32(dy) * f32(weight);
  let xhat = xf * rstd;
  let dot = sum(g * xhat, over H) / f32(H);
  dx = bf16(rstd * (g - xhat * dot));
  dweight = bf16(sum(f32(dy) * xhat, over T));
}
schedule rms_norm_backward = auto(inner_outer) { grid_sync = %s; }
"""
        call = [bf16(40, 2048), bf16(40, 2048), bf16(2048), fslc.descriptor((40,), "f32"),
                bf16(40, 2048), bf16(2048)]
        launches = {}
        for on in ("true", "false"):
            prog = fslc.load_text("grid_sync_%s.fsl" % on, text % on, arch="sm_90a", cache_dir=CACHE,
                                  library=LIBRARY, torch_ops=False)
            info = prog.rms_norm_backward.prepare(call)
            launches[on] = [(l["kernel"], l["cooperative"]) for l in info["launches"]]
            prog.close()
        self.assertEqual(launches["true"], [("rms_norm_backward_v0", True)])
        self.assertEqual(launches["false"], [("rms_norm_backward_v0", False),
                                             ("rms_norm_backward_v0_rows", False)])

    def test_10_library_lookup(self):
        from fslc import _capi
        saved = os.environ.get("FSL_LIBRARY")
        try:
            os.environ["FSL_LIBRARY"] = LIBRARY
            self.assertEqual(list(_capi._candidates(None)), [(LIBRARY, "$FSL_LIBRARY")])
            del os.environ["FSL_LIBRARY"]
            places = [where for _, where in _capi._candidates(None)]
            if INSTALLED:  # a wheel in site-packages: neither an installation nor a repository
                self.assertEqual(places, ["the package's own", "the loader's search path"])
                # Found without library= or $FSL_LIBRARY: the wheel's own copy.
                self.assertEqual(os.path.realpath(_capi.load_library(None).path), os.path.realpath(LIBRARY))
            else:
                self.assertEqual(places, ["the package's own", "the repository's build tree",
                                          "the loader's search path"])
            self.assertEqual(list(_capi._candidates("/x/libfsl.so")), [("/x/libfsl.so", "library=")])
            self.assertIs(_capi.load_library(LIBRARY), self.prog._lib)
        finally:
            if saved is None:
                os.environ.pop("FSL_LIBRARY", None)
            else:
                os.environ["FSL_LIBRARY"] = saved

    def test_11_library_dependencies(self):
        """libfsl.so runs where neither the ANTLR runtime nor toml++ is installed: only
        the C API is exported, and its dependencies are the system's C and C++ libraries,
        NVRTC, and the ANTLR runtime copied next to it (found through RUNPATH $ORIGIN)."""
        import subprocess
        if not shutil.which("readelf") or not shutil.which("nm"):
            self.skipTest("no readelf or nm")
        dynamic = subprocess.run(["readelf", "-d", LIBRARY], capture_output=True, text=True).stdout
        needed = {line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line}
        antlr = [n for n in needed if n.startswith("libantlr4-runtime.so")]
        self.assertEqual(len(antlr), 1, needed)
        system = {"libnvrtc.so.13", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6",
                  "ld-linux-x86-64.so.2", "libdl.so.2", "libpthread.so.0", "librt.so.1"}
        self.assertEqual(needed - system - set(antlr), set(), "unexpected dependencies")
        self.assertIn("$ORIGIN", dynamic)
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(LIBRARY), antlr[0])))
        exported = subprocess.run(["nm", "-D", "--defined-only", LIBRARY], capture_output=True,
                                  text=True).stdout.split()[2::3]
        self.assertTrue(exported and all(name.startswith("fsl_") for name in exported), exported)
        for name in ("fsl_program_load", "fsl_jit_session_launch", "fsl_jit_compile"):
            self.assertIn(name, exported)

    def test_12_layouts(self):
        """The three places the package can sit (fslc/_places.py), from their paths."""
        from fslc import _places
        prefix = os.path.join(WORK, "prefix")
        installed = os.path.join(prefix, "share", "fslc", "python", "fslc")
        self.assertEqual(_places.installation_prefix(installed), prefix)
        self.assertEqual([where for _, where in _places.library_places(installed)],
                         ["the package's own", "the installation's lib/", "the loader's search path"])
        self.assertEqual(_places.library_places(installed)[1][0], os.path.join(prefix, "lib", "libfsl.so"))
        self.assertEqual(_places.executable_places(installed)[1][0], os.path.join(prefix, "bin", "fslc"))
        self.assertEqual(_places.stdlib_places(installed)[1][0],
                         os.path.join(prefix, "share", "fslc", "stdlib"))
        in_tree = os.path.join(ROOT, "python", "fslc")
        self.assertIsNone(_places.installation_prefix(in_tree))
        self.assertEqual(_places.repository(in_tree), ROOT)
        self.assertEqual(_places.stdlib_places(in_tree)[-1], (os.path.join(ROOT, "stdlib"), "the repository's"))
        wheel = os.path.join(WORK, "venv", "lib", "python3.11", "site-packages", "fslc")
        self.assertIsNone(_places.installation_prefix(wheel))
        self.assertIsNone(_places.repository(wheel))
        self.assertEqual(_places.find_stdlib("relative/std"), os.path.abspath("relative/std"))

    def test_13_own_pieces(self):
        """Where the package's libfsl.so and stdlib come from: installed, its own copies,
        nothing of the source tree; in the source tree, the tree's stdlib."""
        saved = os.environ.pop("FSLC_STDLIB", None)
        try:
            prog = fslc.load(NORMS, runtime_dims="H", arch="sm_90a", cache_dir=CACHE,
                             library=LIBRARY if not INSTALLED else None, torch_ops=False)
        finally:
            if saved is not None:
                os.environ["FSLC_STDLIB"] = saved
        if INSTALLED:
            self.assertNotEqual(PACKAGE, os.path.join(ROOT, "python", "fslc"))
            self.assertTrue(PACKAGE.startswith(sys.prefix + os.sep), "imported %s, not the installed copy" % PACKAGE)
            self.assertEqual(prog.stdlib, os.path.join(PACKAGE, "share", "fslc", "stdlib"))
            self.assertEqual(os.path.realpath(prog._lib.path), os.path.realpath(LIBRARY))
        else:
            self.assertEqual(PACKAGE, os.path.join(ROOT, "python", "fslc"))
            self.assertEqual(prog.stdlib, os.path.join(ROOT, "stdlib"))
        self.assertTrue(os.path.isfile(os.path.join(prog.stdlib, "targets", "h200.toml")))

    def test_09b_policy_innermost(self):
        # The default policy also specializes the innermost dimension of a 2-D tensor (RoPE's
        # D: its vectors and rows a block; SwiGLU's H2 and H, whose halves of a row then
        # move as vectors).
        rope = fslc.load(os.path.join(ROOT, "stdlib", "std", "rope.fsl"), arch="sm_90a",
                         cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        info = rope.rope_forward.prepare([bf16(5, 128), bf16(5, 128), bf16(5, 128), bf16(5, 128)])
        self.assertEqual(info["specialization"], "rope_forward.D128")
        acts = fslc.load(os.path.join(ROOT, "stdlib", "std", "activations.fsl"), arch="sm_90a",
                         cache_dir=CACHE, library=LIBRARY, torch_ops=False)
        info = acts.swiglu.prepare([bf16(3, 256), bf16(128), bf16(3, 128)])
        self.assertEqual(info["specialization"], "swiglu.H128.H2256")
        self.assertEqual([l["kernel"] for l in info["launches"]], ["swiglu_v0"])
        info = acts.swiglu.prepare([bf16(3, 256), bf16(128), bf16(3, 128)])
        self.assertTrue(info["memory_hit"])

    def test_14_compiler(self):
        """`python -m fslc` runs the compiler the package finds: installed, its own
        fslc/bin/fslc (with the ANTLR runtime of fslc/lib and its own stdlib)."""
        env = dict(os.environ)
        env.pop("FSLC_STDLIB", None)
        if not INSTALLED:
            env["PYTHONPATH"] = os.path.join(ROOT, "python")

        def fslc_main(*args, input=None):
            return subprocess.run([sys.executable, "-m", "fslc", *args], capture_output=True, text=True,
                                  env=env, input=input, cwd=WORK)

        if not INSTALLED and os.path.dirname(os.path.dirname(LIBRARY)) != os.path.join(ROOT, "build"):
            self.skipTest("python -m fslc in the source tree runs build/bin/fslc; this build is elsewhere")
        from fslc import __main__ as main
        path, launch_env = main.executable()
        if INSTALLED:
            self.assertEqual(path, os.path.join(PACKAGE, "bin", "fslc"))
            # The ANTLR runtime copied next to libfsl.so comes first for the executable.
            self.assertEqual(launch_env["LD_LIBRARY_PATH"].split(os.pathsep)[0], os.path.join(PACKAGE, "lib"))
        else:
            self.assertEqual(path, os.path.join(ROOT, "build", "bin", "fslc"))
        run = fslc_main("--help")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("--emit=", run.stdout)
        run = fslc_main("--print-targets")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("h200", run.stdout)
        stdlib = os.path.join(PACKAGE, "share", "fslc", "stdlib") if INSTALLED else os.path.join(ROOT, "stdlib")
        self.assertIn(stdlib, run.stdout)
        # A real compile: norms.fsl's CUDA and launcher, and a diagnostic with its location.
        out = os.path.join(WORK, "fslc-out")
        run = fslc_main(NORMS, "-o", out, "--emit=cuda")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertTrue(any(name.endswith(".cu") for name in os.listdir(out)), os.listdir(out))
        run = fslc_main("-", input="fusion f(x: f32[N]) -> (y: f32[N]) { y = x + ; }")
        self.assertEqual(run.returncode, 1)
        self.assertIn("<stdin>:1:", run.stderr)
        if INSTALLED:
            # The wheel's console script is the same program.
            script = os.path.join(os.path.dirname(sys.executable), "fslc")
            run = subprocess.run([script, "--version"], capture_output=True, text=True, env=env)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("fslc", run.stdout + run.stderr)


# Devices as the CUDA driver describes them (cuDeviceGetName, cuDeviceGetAttribute,
# cuDeviceTotalMem): the choice of a target is tested without a GPU.
H200 = ("NVIDIA H200", 9, 0, 132, 150_109_880_320)
H100_SXM = ("NVIDIA H100 80GB HBM3", 9, 0, 132, 85_029_158_912)
H100_PCIE = ("NVIDIA H100 PCIe", 9, 0, 114, 85_029_158_912)
A100_40GB = ("NVIDIA A100-SXM4-40GB", 8, 0, 108, 42_505_273_344)
RTX_4090 = ("NVIDIA GeForce RTX 4090", 8, 9, 128, 25_393_692_672)


class FakeDriver:
    """The CUDA driver calls of fslc._device.driver_device, answering for one device
    (or failing as told)."""

    def __init__(self, device=None, init=0, count=1, context=None):
        self.device, self.init, self.count, self.context = device, init, count, context
        self.ordinals = []

    def cuInit(self, flags):
        return self.init

    def cuDeviceGetCount(self, count):
        count._obj.value = self.count
        return 0

    def cuCtxGetCurrent(self, context):
        context._obj.value = 0x1000 if self.context is not None else None
        return 0

    def cuCtxGetDevice(self, device):
        device._obj.value = self.context
        return 0

    def cuDeviceGet(self, device, ordinal):
        device._obj.value = ordinal
        return 0

    def cuDeviceGetAttribute(self, value, attribute, ordinal):
        self.ordinals.append(ordinal)
        name, major, minor, sms, memory = self.device
        value._obj.value = {75: major, 76: minor, 16: sms}[attribute]
        return 0

    def cuDeviceTotalMem_v2(self, memory, ordinal):
        memory._obj.value = self.device[4]
        return 0

    def cuDeviceGetName(self, name, size, ordinal):
        name.value = self.device[0].encode()
        return 0

    def cuGetErrorName(self, status, name):
        name._obj.value = {999: b"CUDA_ERROR_UNKNOWN"}.get(status)
        return 0 if name._obj.value else 1


class DeviceTargetTest(unittest.TestCase):
    """fslc.load without target=: the target of the current device (fslc/_device.py)."""

    @classmethod
    def setUpClass(cls):
        from fslc import _places
        cls.stdlib = _places.find_stdlib()
        cls.targets = fslc.read_targets(cls.stdlib)

    def choose(self, device):
        return fslc.select_target(fslc.Device(*device), self.targets).name

    def test_targets(self):
        by_name = {t.name: t for t in self.targets}
        self.assertEqual(sorted(by_name), ["a100", "h100-sxm", "h200"])
        self.assertEqual((by_name["h200"].arch, by_name["h200"].capability, by_name["h200"].sm_count),
                         ("sm_90a", (9, 0), 132))
        self.assertEqual(by_name["a100"].capability, (8, 0))
        from fslc import _device
        self.assertEqual(_device.capability("sm_100a"), (10, 0))
        self.assertEqual(_device.capability("sm_120"), (12, 0))
        with self.assertRaises(fslc.FslTargetError):
            _device.capability("hopper")

    def test_selection(self):
        self.assertEqual(self.choose(H200), "h200")
        # Same compute capability and SM count as the H200: the memory decides.
        self.assertEqual(self.choose(H100_SXM), "h100-sxm")
        self.assertEqual(self.choose(A100_40GB), "a100")
        self.assertIsNone(fslc.select_target(None, self.targets))
        for unknown, shown in ((RTX_4090, "compute capability 8.9, 128 SMs"),
                               (H100_PCIE, "compute capability 9.0, 114 SMs")):
            with self.assertRaises(fslc.FslTargetError) as caught:
                self.choose(unknown)
            message = str(caught.exception)
            self.assertIn("no target matches the device %s (%s" % (unknown[0], shown), message)
            self.assertIn("a100 (sm_80, 108 SMs, 80.0 GiB), h100-sxm (sm_90a, 132 SMs, 80.0 GiB), "
                          "h200 (sm_90a, 132 SMs, 140.0 GiB); pass target=", message)

    def test_driver_query(self):
        from fslc import _device
        driver = FakeDriver(H100_SXM)
        device = _device.driver_device(driver)
        self.assertEqual((device.name, device.capability, device.sm_count, device.memory_bytes),
                         ("NVIDIA H100 80GB HBM3", (9, 0), 132, 85_029_158_912))
        self.assertEqual(set(driver.ordinals), {0})  # no current context: device 0
        driver = FakeDriver(H200, context=3)
        self.assertEqual(_device.driver_device(driver).name, "NVIDIA H200")
        self.assertEqual(set(driver.ordinals), {3})  # the current context's device
        # No GPU: no driver, the driver's CUDA_ERROR_NO_DEVICE, or no device counted.
        self.assertIsNone(_device.driver_device(None))
        self.assertIsNone(_device.driver_device(FakeDriver(H200, init=100)))
        self.assertIsNone(_device.driver_device(FakeDriver(H200, count=0)))
        with self.assertRaises(fslc.FslDriverError) as caught:
            _device.driver_device(FakeDriver(H200, init=999))
        self.assertIn("cuInit failed: CUDA_ERROR_UNKNOWN (999)", str(caught.exception))
        with self.assertRaises(fslc.FslDriverError) as caught:
            _device.driver_device(FakeDriver(H200, init=3))
        self.assertIn("cuInit failed: error (3)", str(caught.exception))
        if _device.Driver.load() is None:  # this machine has no CUDA driver (CI)
            self.assertIsNone(fslc.current_device())

    def test_torch_device(self):
        """With torch imported, its current device (faked: no torch needed)."""
        import types
        from fslc import _device
        properties = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132,
                                           total_memory=H200[4])
        cuda = types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,
                                     get_device_properties=lambda index: properties)
        saved = sys.modules.get("torch")
        try:
            sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)
            self.assertEqual(self.choose_current(), "h200")
            cuda.is_available = lambda: False
            self.assertIsNone(_device.current_device())
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved

    def choose_current(self):
        return fslc.device_target(self.stdlib)

    def load(self, device, **options):
        """fslc.load with the current device replaced by `device` (a tuple or None)."""
        from fslc import _device
        saved = _device.current_device
        _device.current_device = lambda: None if device is None else fslc.Device(*device)
        try:
            return fslc.load(NORMS, runtime_dims="H", cache_dir=CACHE, library=LIBRARY, torch_ops=False,
                             **options)
        finally:
            _device.current_device = saved

    def test_load(self):
        prog = self.load(A100_40GB, arch="sm_80")
        self.assertEqual((prog.target, prog.arch, prog.device.name), ("a100", "sm_80", "NVIDIA A100-SXM4-40GB"))
        # Compiled for the A100's target (NVRTC for sm_80).
        self.assertEqual(len(prog.rms_norm_add.prepare(rms_norm_add_call(8, 4096))["launches"]), 1)
        prog = self.load(H100_SXM, arch="sm_90a")
        self.assertEqual((prog.target, prog.arch), ("h100-sxm", "sm_90a"))
        # No GPU: the default target, for the paths that need none.
        prog = self.load(None, arch="sm_90a")
        self.assertEqual((prog.target, prog.device), ("h200", None))
        # An explicit target: the device is not asked.
        from fslc import _device
        saved = _device.current_device
        _device.current_device = lambda: self.fail("the device was queried despite target=")
        try:
            prog = fslc.load(NORMS, runtime_dims="H", target="a100", arch="sm_80", cache_dir=CACHE,
                             library=LIBRARY, torch_ops=False)
        finally:
            _device.current_device = saved
        self.assertEqual((prog.target, prog.device), ("a100", None))
        with self.assertRaises(fslc.FslTargetError) as caught:
            self.load(RTX_4090, arch="sm_89")
        self.assertIn("no target matches the device NVIDIA GeForce RTX 4090", str(caught.exception))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
