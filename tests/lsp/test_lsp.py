#!/usr/bin/env python3
"""Protocol tests of fsl-lsp: a scripted LSP client over the server's stdin/stdout.

    test_lsp.py FSL_LSP FSLC SOURCE_DIR

Each test starts the server, speaks LSP to it (Content-Length framed JSON-RPC) and
asserts what comes back: diagnostics with their ids and related notes, errors in an
imported file, formatting equal to `fslc --emit=format`, the outline, hover texts with
the derived extents, definitions across an import, references, completion, inlay hints,
the generated CUDA and Kernel IR of a fusion, shutdown/exit; and that garbage and
half-typed files leave it up. Ends with 'N passed, N failed'.
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback

FSL_LSP, FSLC, SOURCE_DIR = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 30


class Client:
    """One fsl-lsp process and the messages it sends."""

    def __init__(self, args=()):
        self.process = subprocess.Popen(
            [FSL_LSP, "--stdlib=" + os.path.join(SOURCE_DIR, "stdlib"), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages = queue.Queue()
        self.next_id = 1
        self.notifications = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def send_raw(self, data):
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message):
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method, params):
        """The response to one request: its result, or raises on an error response."""
        ident = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            assert message is not None, "the server exited while answering " + method
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise ResponseError(message["error"])
                return message["result"]
            self.notifications.append(message)

    def diagnostics(self, uri):
        """The next diagnostics published for `uri` (older ones are skipped)."""
        for index, message in enumerate(self.notifications):
            if message.get("method") == "textDocument/publishDiagnostics" and \
                    message["params"]["uri"] == uri:
                del self.notifications[:index + 1]
                return message["params"]["diagnostics"]
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            assert message is not None, "the server exited before publishing diagnostics"
            if message.get("method") == "textDocument/publishDiagnostics" and \
                    message["params"]["uri"] == uri:
                return message["params"]["diagnostics"]
            self.notifications.append(message)

    def initialize(self):
        result = self.request("initialize", {"processId": None, "rootUri": None,
                                             "capabilities": {}})
        self.notify("initialized", {})
        return result

    def open(self, path, text=None, version=1):
        if text is None:
            with open(path) as file:
                text = file.read()
        uri = "file://" + path
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "fsl", "version": version, "text": text}})
        return uri

    def at(self, uri, line, character):
        return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}

    def finish(self):
        """shutdown, then exit: the server must exit with 0."""
        assert self.request("shutdown", None) is None
        self.notify("exit", None)
        code = self.process.wait(timeout=TIMEOUT)
        assert code == 0, "exit code %d after shutdown and exit; stderr: %s" % (
            code, self.process.stderr.read().decode())

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ResponseError(Exception):
    def __init__(self, error):
        super().__init__(error.get("message"))
        self.error = error


def workspace():
    """A folder with main.fsl importing lib.fsl (copies: tests may edit them)."""
    folder = tempfile.mkdtemp(prefix="fsl-lsp-test-")
    for name in ("main.fsl", "lib.fsl"):
        shutil.copy(os.path.join(HERE, name), folder)
    return folder


def line_of(text, needle, nth=0):
    """(line, character) of the nth occurrence of `needle` in `text`."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    before = text[:index]
    return before.count("\n"), index - (before.rfind("\n") + 1)


def session(test):
    def run():
        folder = workspace()
        client = Client()
        try:
            client.initialize()
            test(client, folder)
        finally:
            client.kill()
            shutil.rmtree(folder, ignore_errors=True)
    run.__name__ = test.__name__
    return run


# --- Tests ---------------------------------------------------------------------------------

@session
def test_initialize_capabilities(client, folder):
    client.kill()
    client = Client()
    capabilities = client.initialize()["capabilities"]
    for provider in ("hoverProvider", "definitionProvider", "referencesProvider",
                     "documentFormattingProvider", "documentSymbolProvider",
                     "foldingRangeProvider", "inlayHintProvider"):
        assert capabilities[provider] is True, provider
    assert capabilities["executeCommandProvider"]["commands"] == [
        "fsl.showGeneratedCuda", "fsl.showKernelIR"]
    assert capabilities["textDocumentSync"]["change"] == 2
    client.finish()


@session
def test_clean_file_has_no_diagnostics(client, folder):
    uri = client.open(os.path.join(folder, "main.fsl"))
    assert client.diagnostics(uri) == []


@session
def test_diagnostics_as_you_type(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    uri = client.open(path, text)
    assert client.diagnostics(uri) == []
    # Misspell a use of `h`: an unknown name, at the misspelt word.
    line, character = line_of(text, "h * h")
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": line, "character": character},
                                      "end": {"line": line, "character": character + 1}},
                            "text": "hh"}]})
    diagnostics = client.diagnostics(uri)
    assert len(diagnostics) == 1, diagnostics
    assert diagnostics[0]["code"] == "unknown-name", diagnostics
    assert diagnostics[0]["severity"] == 1
    assert "'hh'" in diagnostics[0]["message"], diagnostics
    assert diagnostics[0]["range"]["start"] == {"line": line, "character": character}
    assert diagnostics[0]["range"]["end"] == {"line": line, "character": character + 2}
    # A schedule error with a note pointing elsewhere: relatedInformation.
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3},
        "contentChanges": [{"text": text.replace("    let ms", "    let h = f32(x);\n    let ms", 1)}]})
    diagnostics = client.diagnostics(uri)
    assert [d["code"] for d in diagnostics] == ["redefinition"], diagnostics
    [note] = diagnostics[0]["relatedInformation"]
    assert note["location"]["uri"] == uri and note["message"] == "'h' declared here"
    assert note["location"]["range"]["start"] == dict(zip(("line", "character"), line_of(text, "h = f32")))
    # Fixed again: the diagnostics are cleared.
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": text}]})
    assert client.diagnostics(uri) == []


@session
def test_errors_in_an_imported_file(client, folder):
    with open(os.path.join(folder, "lib.fsl"), "w") as file:
        file.write("fn gelu(x) = 0.5 * x * (1.0 + tanh(y));\n")
    uri = client.open(os.path.join(folder, "main.fsl"))
    lib_uri = "file://" + os.path.join(folder, "lib.fsl")
    diagnostics = client.diagnostics(uri)
    at_import = [d for d in diagnostics if d["range"]["start"]["line"] == 0]
    assert at_import, diagnostics
    assert "in imported file" in at_import[0]["message"] and "lib.fsl" in at_import[0]["message"]
    assert at_import[0]["relatedInformation"][0]["location"]["uri"] == lib_uri
    lib = client.diagnostics(lib_uri)
    assert lib and lib[0]["code"] == "unknown-name", lib
    assert lib[0]["range"]["start"] == {"line": 0, "character": 35}


@session
def test_formatting_is_the_canonical_printer(client, folder):
    path = os.path.join(folder, "main.fsl")
    messy = open(path).read().replace("split H by 8", "split   H  by 8").replace(
        "    let ms", "  let    ms")
    uri = client.open(path, messy)
    edits = client.request("textDocument/formatting", {
        "textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": True}})
    assert len(edits) == 1, edits
    with open(path, "w") as file:
        file.write(messy)
    expected = subprocess.run([FSLC, "--emit=format", path], capture_output=True, text=True,
                              check=True).stdout
    assert edits[0]["newText"] == expected
    assert edits[0]["range"]["start"] == {"line": 0, "character": 0}
    # Already canonical: no edit. Does not parse: an error saying so.
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": expected}]})
    assert client.request("textDocument/formatting", {"textDocument": {"uri": uri}}) == []
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "fusion f("}]})
    try:
        client.request("textDocument/formatting", {"textDocument": {"uri": uri}})
        raise AssertionError("formatting a file with syntax errors must fail")
    except ResponseError as error:
        assert "syntax errors" in str(error)


@session
def test_document_symbols_and_folding(client, folder):
    uri = client.open(os.path.join(folder, "main.fsl"))
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [s["name"] for s in symbols] == [
        '"lib.fsl"', "rms_norm_add", "schedule rms_norm_add", "schedule rms_norm_add when T < 132"]
    fusion = symbols[1]
    assert [c["name"] for c in fusion["children"]] == [
        "H", "x", "residual", "weight", "eps", "y", "h", "ms", "g"]
    assert fusion["children"][2]["detail"] == "inout bf16[T, H]"
    assert symbols[2]["children"][0]["name"] == "split H by 8 -> (Ho, Hv);"
    assert symbols[0]["detail"] == os.path.join(folder, "lib.fsl")
    folds = client.request("textDocument/foldingRange", {"textDocument": {"uri": uri}})
    assert {"startLine": 2, "endLine": 13, "kind": "region"} in folds, folds
    assert {"startLine": 15, "endLine": 23, "kind": "region"} in folds, folds


@session
def test_hover(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    uri = client.open(path)

    def hover(needle, nth=0, offset=0):
        line, character = line_of(text, needle, nth)
        result = client.request("textDocument/hover", client.at(uri, line, character + offset))
        assert result is not None, "no hover on " + needle
        return result["contents"]["value"]

    # A dimension's extent; a value's dtype and shape.
    assert "H = 4096 (static)" in hover("H by 8")
    assert "T (a runtime size" in hover("T < 132")
    assert "h: f32[T, H]" in hover("h = f32")
    assert "ms: f32[T]" in hover("ms + eps")
    residual = hover("residual = bf16")
    assert "residual: bf16[T, H]" in residual and "inout parameter" in residual, residual
    # A loop after the schedule: its derived extent and binding, per block.
    assert "Hx: 64 (TIDx" in hover("Hx -> TIDx")
    assert "Hx: 256 (TIDx" in hover("Hx -> TIDx", nth=1)
    assert "Hp: 8 (serial, unrolled fully" in hover("unroll Hp", offset=7)
    # A directive: the note --emit=schedule prints.
    assert "Hp: 8, Hx: 64" in hover("split Ho by 64")
    # A `when` guard: the variant and the kernels.
    guard = hover("T < 132", offset=2)
    assert "taken when `T < 132`" in guard and "when T < 132:" in guard, guard
    # A fusion: signature, schedules, and its kernels' launch shapes.
    fusion = hover("rms_norm_add<")
    assert "fusion rms_norm_add<H = 4096>(" in fusion
    assert "block (64, 1, 1) = 64 threads" in fusion, fusion
    assert "block (256, 1, 1) = 256 threads" in fusion, fusion
    assert "dynamic shared memory" in fusion
    # A fn from the imported file.
    fn = hover("gelu(")
    assert "fn gelu(x) = 0.5 * x" in fn and "lib.fsl" in fn, fn
    # Nothing to say on punctuation.
    line, character = line_of(text, "{")
    assert client.request("textDocument/hover", client.at(uri, line, character)) is None


@session
def test_definition_and_references(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    uri = client.open(path)
    lib_uri = "file://" + os.path.join(folder, "lib.fsl")

    def definition(needle, nth=0, offset=0):
        line, character = line_of(text, needle, nth)
        return client.request("textDocument/definition", client.at(uri, line, character + offset))

    # Across the import: the fn, and the import itself.
    [gelu] = definition("gelu(")
    assert gelu["uri"] == lib_uri
    assert gelu["range"]["start"] == {"line": 1, "character": 3}
    [imported] = definition('"lib.fsl"', offset=2)
    assert imported["uri"] == lib_uri and imported["range"]["start"] == {"line": 0, "character": 0}
    # A value, a dimension, a loop (in its own block), a fusion.
    [h] = definition("h * h")
    assert h["range"]["start"] == dict(zip(("line", "character"), line_of(text, "h = f32")))
    [dim] = definition("H by 8")
    assert dim["range"]["start"] == dict(zip(("line", "character"), line_of(text, "H = 4096")))
    [loop] = definition("Hx -> TIDx", nth=1)
    assert loop["range"]["start"] == dict(zip(("line", "character"), line_of(text, "Hx)", nth=1)))
    [fusion] = definition("rms_norm_add when")
    assert fusion["range"]["start"] == dict(zip(("line", "character"), line_of(text, "rms_norm_add<")))
    # References of `h`: its let, its four uses in the body, two in each schedule.
    line, character = line_of(text, "h = f32")
    params = client.at(uri, line, character)
    params["context"] = {"includeDeclaration": True}
    references = client.request("textDocument/references", params)
    assert len(references) == 9, references
    params["context"] = {"includeDeclaration": False}
    assert len(client.request("textDocument/references", params)) == 8
    # References of gelu reach the imported file's declaration.
    line, character = line_of(text, "gelu(")
    params = client.at(uri, line, character)
    params["context"] = {"includeDeclaration": True}
    uris = sorted(r["uri"] for r in client.request("textDocument/references", params))
    assert uris == sorted([uri, lib_uri]), uris


@session
def test_completion(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    uri = client.open(path)

    def complete(new_text, needle):
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": new_text}]})
        if needle is None:  # at the end of the text
            line, character = text_end(new_text)
        else:
            line, character = line_of(new_text, needle)
            character += len(needle)
        result = client.request("textDocument/completion", client.at(uri, line, character))
        return {item["label"]: item for item in result["items"]}

    # A directive at the start of a statement (the file does not parse while typing).
    items = complete(text.replace("    compute_with h;\n}", "    compute_with h;\n    un\n}", 1), "    un")
    assert "unroll" in items and "split" in items and "parallelize" in items, items.keys()
    assert items["split"]["insertTextFormat"] == 2
    # Loop and tensor names in scope.
    items = complete(text.replace("    unroll Hp;", "    unroll ", 1), "    unroll ")
    for name in ("Ho", "Hv", "Hp", "Hx", "h", "x", "H", "T"):
        assert name in items, (name, items.keys())
    # Parallel types after `->`; memory kinds after `in`.
    items = complete(text.replace("Hx -> TIDx;", "Hx ->", 1), "Hx ->")
    assert set(items) == {"BIDx", "BIDy", "BIDz", "TIDx", "TIDy", "TIDz"}
    items = complete(text.replace("persistent h in registers;", "persistent h in ", 1),
                     "persistent h in ")
    assert set(items) == {"registers", "shared", "recompute"}
    # The walk of persistent tiles after `tiles persistent`.
    items = complete(text.replace("    unroll Hp;", "    tiles persistent ", 1), "    tiles persistent ")
    assert set(items) == {"swizzle", "hilbert"}, items.keys()
    # Knobs with their ranges in `= auto(...) { }`; heuristic kinds in `auto(`.
    auto = text + "\nschedule rms_norm_add when T >= 100000 = auto(inner_persistent) {\n    \n}\n"
    items = complete(auto, "inner_persistent) {\n    ")
    assert items["vector_width"]["detail"] == "int, a power of two", items["vector_width"]
    assert items["static_bdimx"]["detail"] == "bool, true or false"
    items = complete(text + "\nschedule rms_norm_add = auto(", "= auto(")
    assert set(items) == {"pointwise", "reduction", "inner_persistent", "inner_outer", "matmul"}
    # Values, fns (imported too) and builtins in a fusion body.
    items = complete(text.replace("    let g =", "    let g = ge\n    let g2 =", 1), "let g = ge")
    assert items["gelu"]["detail"].startswith("fn from "), items.get("gelu")
    for name in ("h", "ms", "x", "eps", "rsqrt", "sum", "f32"):
        assert name in items, name
    # Top level: declarations; after `schedule `: fusion names.
    items = complete(text + "\nsch", None)
    assert {"fusion", "fn", "schedule", "import"} <= set(items)
    items = complete(text + "\nschedule ", None)
    assert set(items) == {"rms_norm_add"}, items.keys()


@session
def test_completion_of_targets_in_fsl_toml(client, folder):
    uri = client.open(os.path.join(folder, "fsl.toml"), 'target = "')
    assert client.diagnostics(uri) == []
    result = client.request("textDocument/completion", client.at(uri, 0, 10))
    labels = {item["label"] for item in result["items"]}
    assert {"h200", "h100-sxm", "a100"} <= labels, labels


@session
def test_inlay_hints(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    uri = client.open(path)
    hints = client.request("textDocument/inlayHint", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 100, "character": 0}}})
    labels = [(h["position"]["line"], h["label"]) for h in hints]
    line, _ = line_of(text, "split H by 8")
    assert (line, "Ho: 512, Hv: 8") in labels, labels
    line, _ = line_of(text, "split Ho by 256")
    assert (line, "Hp: 2, Hx: 256") in labels, labels
    line, _ = line_of(text, "persistent h")
    assert (line, "h: 64 values of f32 per thread") in labels, labels
    first = [h for h in hints if h["label"] == "Ho: 512, Hv: 8"][0]
    assert first["position"]["character"] == len("    split H by 8 -> (Ho, Hv);")
    # Only inside the range asked for.
    few = client.request("textDocument/inlayHint", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 15, "character": 0}, "end": {"line": 17, "character": 0}}})
    assert 0 < len(few) < len(hints)


@session
def test_execute_command(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    uri = client.open(path)
    line, character = line_of(text, "vectorize Hv")

    def command(name):
        return client.request("workspace/executeCommand", {"command": name, "arguments": [
            {"uri": uri, "position": {"line": line, "character": character}}]})

    cuda = command("fsl.showGeneratedCuda")
    assert cuda["fusion"] == "rms_norm_add" and cuda["language"] == "cuda"
    expected = subprocess.run([FSLC, "--emit=cuda", path], capture_output=True, text=True,
                              check=True).stdout
    assert cuda["text"] == expected
    kernel_ir = command("fsl.showKernelIR")
    expected = subprocess.run([FSLC, "--emit=kernel-ir", path], capture_output=True, text=True,
                              check=True).stdout
    assert kernel_ir["text"] == expected
    line, character = 0, 0  # on the import: no fusion
    try:
        command("fsl.showKernelIR")
        raise AssertionError("a command outside any fusion must fail")
    except ResponseError as error:
        assert "no fusion here" in str(error)
    try:
        command("fsl.unknown")
        raise AssertionError("an unknown command must fail")
    except ResponseError as error:
        assert "unknown command" in str(error)


@session
def test_garbage_and_half_typed_files_keep_it_up(client, folder):
    path = os.path.join(folder, "main.fsl")
    text = open(path).read()
    # Not JSON, a header without a body, a request for a method nobody has.
    client.send_raw(b"Content-Length: 5\r\n\r\n{{{{{")
    client.send_raw(b"Content-Length: 2\r\n\r\n[]")
    try:
        client.request("textDocument/noSuchThing", {})
        raise AssertionError("an unknown method must be an error")
    except ResponseError as error:
        assert error.error["code"] == -32601
    uri = client.open(path, "")
    assert [d["code"] for d in client.diagnostics(uri)] == ["empty-file"]
    # Every prefix of the file at some steps, and bytes that are not UTF-8: diagnostics
    # come back, and each feature answers without the server going away.
    version = 1
    samples = [text[:n] for n in range(0, len(text), 37)] + [
        "fusion f<H = >(x: bf16[T, H]) -> (y: bf16[T, H]) { y = x + ; }",
        "schedule nope { split Q by 0 -> (A, A); }",
        "fusion \udcff(",
        "(" * 5000,
        "fn f(x) = f(x);\nfusion g(x: f32[N]) -> (y: f32[N]) { y = f(x); }",
    ]
    for sample in samples:
        version += 1
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": sample.encode("utf-8", "surrogateescape").decode(
                "utf-8", "replace")}]})
        client.diagnostics(uri)
        end = text_end(sample)
        for method, extra in (("textDocument/hover", {}), ("textDocument/definition", {}),
                              ("textDocument/completion", {}),
                              ("textDocument/references", {"context": {"includeDeclaration": True}})):
            params = client.at(uri, *end)
            params.update(extra)
            client.request(method, params)
        client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        client.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
            "start": {"line": 0, "character": 0}, "end": {"line": 9999, "character": 0}}})
    # An edit outside the text is refused, and the server answers the next request.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 999},
        "contentChanges": [{"range": {"start": {"line": 500, "character": 0},
                                      "end": {"line": 501, "character": 0}}, "text": "x"}]})
    assert client.request("textDocument/hover", client.at(uri, 0, 0)) is None
    # Still the same server, answering a normal session to the end.
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 1000}, "contentChanges": [{"text": text}]})
    assert client.diagnostics(uri) == []
    assert client.process.poll() is None
    client.finish()


def text_end(text):
    lines = text.split("\n")
    return len(lines) - 1, len(lines[-1])


@session
def test_exit_without_shutdown_is_an_error(client, folder):
    client.notify("exit", None)
    assert client.process.wait(timeout=TIMEOUT) == 1


def main():
    tests = [value for name, value in sorted(globals().items()) if name.startswith("test_")]
    passed = failed = 0
    for test in tests:
        try:
            test()
            passed += 1
            print("PASS", test.__name__)
        except Exception:
            failed += 1
            print("FAIL", test.__name__)
            traceback.print_exc()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
