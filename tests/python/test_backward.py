"""`backward` pairings from the compiler to PyTorch autograd, without torch or a GPU.

usage: python3 tests/python/test_backward.py LIBFSL SOURCE_DIR WORK_DIR

The signatures libfsl.so gives (fsl_program_signature) carry each forward fusion's backward
fusions (`backward NAME...`) and the inputs sharing a gradient (`same_gradient INPUT SOURCE`),
which the JIT session accepts; fslc._program.GradientPlan
says what the forward saves and how each backward fusion is called; and
fslc._torch._register_autograd, run against a stand-in `torch` that records the
registration, saves those tensors and calls the backward fusions' ops with them, the
outputs' gradients (made contiguous) and the scalars, returning None for inputs without a
gradient. A pairing the compiler refuses fails the load with its diagnostic.
"""

import contextlib
import os
import shutil
import sys
import types
import unittest

LIBRARY, ROOT, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
sys.path.insert(0, os.path.join(ROOT, "python"))
import fslc  # noqa: E402
from fslc._program import GradientPlan  # noqa: E402

STD = os.path.join(ROOT, "stdlib", "std")


def load(name, **options):
    return fslc.load(os.path.join(STD, name), arch="sm_90a", cache_dir=os.path.join(WORK, "cache"),
                     library=LIBRARY, torch_ops=False, **options)


class Tensor:
    """A stand-in tensor: a name, and whether .contiguous() was called."""

    def __init__(self, name):
        self.name = name
        self.made_contiguous = False

    def contiguous(self):
        copy = Tensor(self.name)
        copy.made_contiguous = True
        return copy

    def __repr__(self):
        return self.name


class Ctx:
    def __init__(self):
        self.saved_tensors = ()
        self.non_differentiable = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors


def fake_torch():
    """Just what fslc/_torch.py touches at import and in _register_autograd."""
    torch = types.ModuleType("torch")
    for name in ("bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        setattr(torch, name, "torch." + name)
    torch.registered = {}
    library = types.ModuleType("torch.library")

    def register_autograd(qualname, backward, setup_context=None, lib=None):
        torch.registered[qualname] = (backward, setup_context)

    library.register_autograd = register_autograd
    torch.library = library
    torch.compiler = types.SimpleNamespace(is_compiling=lambda: False)
    return torch


@contextlib.contextmanager
def stand_in_torch():
    """fslc._torch imported against fake_torch(), then forgotten (the module and the
    package's attribute, so that the next import sees the next stand-in)."""
    torch = fake_torch()
    saved_module = sys.modules.get("torch")
    sys.modules["torch"] = torch
    sys.modules.pop("fslc._torch", None)
    try:
        from fslc import _torch
        yield torch, _torch
    finally:
        if saved_module is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = saved_module
        sys.modules.pop("fslc._torch", None)
        if hasattr(fslc, "_torch"):
            delattr(fslc, "_torch")


class BackwardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.norms = load("norms.fsl")
        cls.losses = load("losses.fsl")

    def test_signatures_carry_the_pairing(self):
        norms = self.norms
        self.assertEqual(norms.rms_norm_train.signature.backward, ["rms_norm_grad"])
        self.assertEqual(norms.rms_norm_add_train.signature.backward, ["rms_norm_add_grad"])
        self.assertEqual(norms.layer_norm_train.signature.backward, ["layer_norm_grad"])
        self.assertEqual(norms.softmax.signature.backward, ["softmax_backward"])
        self.assertIn("\nbackward rms_norm_grad\n", norms.rms_norm_train.signature.text)
        # Fusions without a clause (the backward fusions themselves among them) have none.
        for name in ("rms_norm", "rms_norm_add", "layer_norm", "rms_norm_backward"):
            self.assertEqual(norms[name].signature.backward, [], name)
            self.assertNotIn("backward", norms[name].signature.text.split("\n")[-2])
        self.assertEqual(self.losses.cross_entropy_train.signature.backward,
                         ["cross_entropy_backward"])

    def test_the_session_prepares_a_paired_fusion(self):
        bf16, f32 = (lambda *s: fslc.descriptor(s, "bf16")), (lambda *s: fslc.descriptor(s, "f32"))
        info = self.norms.rms_norm_train.prepare([bf16(3, 64), bf16(64), bf16(3, 64), f32(3)])
        self.assertTrue(info["launches"])

    def test_plan_rms_norm_train(self):
        norms = self.norms
        plan = GradientPlan(norms.rms_norm_train.signature,
                            [norms.rms_norm_backward.signature, norms.rms_norm_backward_weight.signature])
        self.assertEqual(plan.saved, ["x", "weight", "rstd"])
        self.assertEqual(plan.calls, [
            ("rms_norm_backward", [("saved", "x"), ("saved", "weight"), ("saved", "rstd"), ("grad", 0)]),
            ("rms_norm_backward_weight", [("saved", "x"), ("saved", "rstd"), ("grad", 0)]),
        ])
        self.assertEqual(plan.results, [["x"], ["weight"]])
        self.assertEqual(plan.differentiable, [0])  # y; rstd is not

    def test_plan_rms_norm_train_one_kernel(self):
        # The stdlib's pairing: x's and the weight's gradients from one fusion.
        norms = self.norms
        plan = GradientPlan(norms.rms_norm_train.signature, [norms.rms_norm_grad.signature])
        self.assertEqual(plan.saved, ["x", "weight", "rstd"])
        self.assertEqual(plan.calls, [
            ("rms_norm_grad", [("saved", "x"), ("saved", "weight"), ("saved", "rstd"), ("grad", 0)]),
        ])
        self.assertEqual(plan.results, [["x", "weight"]])

    def test_plan_cross_entropy_scalars_pass_through(self):
        losses = self.losses
        plan = GradientPlan(losses.cross_entropy_train.signature,
                            [losses.cross_entropy_backward.signature])
        self.assertEqual(plan.saved, ["logits", "label", "lse"])
        self.assertEqual(plan.calls[0][1], [("saved", "logits"), ("saved", "label"), ("saved", "lse"),
                                            ("grad", 0), ("scalar", "ignore_index"),
                                            ("scalar", "smoothing")])
        self.assertEqual(plan.results, [["logits"]])
        self.assertEqual(plan.differentiable, [0])

    def test_register_autograd_with_a_stand_in_torch(self):
        with stand_in_torch() as (torch, _torch):
            prog = self.losses
            calls = []
            backward_fusion = prog.cross_entropy_backward
            backward_fusion.op = lambda *args: calls.append(args) or Tensor("grad_logits")
            forward = prog.cross_entropy_train
            forward.op_name = "fsl::cross_entropy_train"
            _torch._register_autograd(prog, forward)
            backward, setup_context = torch.registered["fsl::cross_entropy_train"]

            ctx = Ctx()
            logits, label, loss, lse = Tensor("logits"), Tensor("label"), Tensor("loss"), Tensor("lse")
            setup_context(ctx, (logits, label, -100, 0.1), (loss, lse))
            self.assertEqual(ctx.saved_tensors, (logits, label, lse))
            self.assertEqual(ctx.non_differentiable, (lse,))

            grads = backward(ctx, Tensor("grad_loss"), Tensor("grad_lse"))
            self.assertEqual(len(calls), 1)
            args = calls[0]
            self.assertEqual([repr(a) for a in args],
                             ["logits", "label", "lse", "grad_loss", "-100", "0.1"])
            self.assertTrue(args[3].made_contiguous)
            # One gradient per input: the logits' from the op, None for label and scalars.
            self.assertEqual([repr(g) for g in grads], ["grad_logits", "None", "None", "None"])

    def test_plan_rms_norm_add_train_one_gradient_for_both_operands(self):
        # `backward rms_norm_add_grad, grad_residual = grad_x`: the fusion writes x's
        # gradient once; residual gets that tensor.
        norms = self.norms
        signature = norms.rms_norm_add_train.signature
        self.assertEqual(signature.same_gradients, [("residual", "x")])
        self.assertIn("\nsame_gradient residual x\n", signature.text)
        self.assertEqual([p.name for p in norms.rms_norm_add_grad.signature.outputs],
                         ["grad_x", "grad_weight"])
        plan = GradientPlan(signature, [norms.rms_norm_add_grad.signature])
        self.assertEqual(plan.results, [["x", "weight"]])
        self.assertEqual(plan.same, [("residual", "x")])

    def test_register_autograd_returns_one_tensor_for_both_operands(self):
        with stand_in_torch() as (torch, _torch):
            prog = self.norms
            prog.rms_norm_add_grad.op = lambda *args: (Tensor("grad_x"), Tensor("grad_weight"))
            forward = prog.rms_norm_add_train
            forward.op_name = "fsl::rms_norm_add_train"
            _torch._register_autograd(prog, forward)
            backward, setup_context = torch.registered["fsl::rms_norm_add_train"]
            ctx = Ctx()
            x, residual, weight = Tensor("x"), Tensor("residual"), Tensor("weight")
            y, h, rstd = Tensor("y"), Tensor("h"), Tensor("rstd")
            setup_context(ctx, (x, residual, weight, 1e-6), (y, h, rstd))
            grads = backward(ctx, Tensor("grad_y"), Tensor("grad_h"), Tensor("grad_rstd"))
            self.assertEqual([repr(g) for g in grads], ["grad_x", "grad_x", "grad_weight", "None"])
            self.assertIs(grads[0], grads[1])

    def test_a_same_gradient_line_without_a_computed_source_is_refused(self):
        forward = fslc._program.Signature(
            "fusion f\ntensor x bf16 in 2 T\ntensor r bf16 in 2 T\ntensor y bf16 out 2 T\n"
            "backward g\nsame_gradient r x\n")
        backward = fslc._program.Signature(
            "fusion g\ntensor grad_y bf16 in 2 T\ntensor grad_r bf16 out 2 T\n")
        with self.assertRaises(fslc.FslError):
            GradientPlan(forward, [backward])

    def test_a_refused_pairing_fails_the_load(self):
        text = """
fusion f(x: f32[T]) -> (y: f32[T]) backward g {
    y = x * x;
}
fusion g(x: f32[T], dy: f32[T]) -> (grad_x: f32[T]) {
    grad_x = 2.0 * x * dy;
}
"""
        with self.assertRaises(fslc.FslCompileError) as caught:
            fslc.load_text(os.path.join(WORK, "bad.fsl"), text, arch="sm_90a", library=LIBRARY,
                           cache_dir=os.path.join(WORK, "cache"), torch_ops=False)
        self.assertIn("parameter 'dy' of backward fusion 'g' is neither an input or output of 'f'",
                      str(caught.exception))
        self.assertIn("[backward-unknown-param]", str(caught.exception))

    def test_a_backward_line_without_names_is_refused(self):
        with self.assertRaises(fslc.FslError):
            fslc._program.Signature("fusion f\nbackward\n")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
