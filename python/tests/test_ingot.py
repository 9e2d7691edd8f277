"""Tests of the Python module `ingot`: every public function and every error path, with
torch as the reference and the `ingot` command line as the reference for messages and
bench statistics. Run through ctest (python_tests) or:
    PYTHONPATH=build/python INGOT_EXE=build/bin/ingot /usr/bin/python3 -m pytest python/tests
"""
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
import onnx.helper
import onnx.numpy_helper
import pytest

import ingot


def cli(ingot_exe, *args):
    return subprocess.run([ingot_exe, *map(str, args)], capture_output=True, text=True)


def cli_error(ingot_exe, *args):
    """The one-line message `ingot` prints after 'error: ' (exit status 2)."""
    r = cli(ingot_exe, *args)
    assert r.returncode == 2, r
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    return r.stderr[len("error: "):].rstrip("\n")


def close(got, want, atol=1e-5, rtol=1e-4):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype == np.bool_:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)


# ---- versions -----------------------------------------------------------------------

def test_versions_match_the_command_line(ingot_exe):
    r = cli(ingot_exe, "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip("\n") == ingot.version_info()
    first = ingot.version_info().splitlines()[0]
    assert first == f"ingot {ingot.__version__}"
    assert f"runtime ABI version {ingot.ABI_VERSION}" in ingot.version_info()
    assert f"module format version {ingot.MODULE_FORMAT_VERSION}" in ingot.version_info()
    assert "built with " in ingot.version_info()


# ---- compile and call ---------------------------------------------------------------

def test_compile_to_bytes_runs_like_torch(models, mlp_bytes):
    assert isinstance(mlp_bytes, bytes) and mlp_bytes[:8] == b"INGOTMOD"
    m = ingot.load(mlp_bytes)
    assert m.path is None
    mlp = models["mlp"]
    (y,) = m(*mlp.inputs)
    close(y, mlp.outputs[0])


def test_compile_a_model_proto(models):
    proto = onnx.load(str(models["cnn"].path))
    m = ingot.load(ingot.compile(proto))
    (logits,) = m(*models["cnn"].inputs)
    close(logits, models["cnn"].outputs[0], atol=1e-4)


def test_signature(mlp_module, models):
    m = ingot.load(ingot.compile(models["multi"].path))
    assert [(t.name, t.shape, t.dtype, t.nbytes) for t in m.inputs] == [
        ("x", (3, 4), np.dtype("float32"), 48), ("idx", (5,), np.dtype("int64"), 40)]
    assert [(t.name, t.shape, t.dtype) for t in m.outputs] == [
        ("y", (3, 6), np.dtype("float32")), ("rows", (5, 4), np.dtype("float32")),
        ("positive", (3, 4), np.dtype("bool"))]
    assert repr(m.inputs[0]) == "TensorInfo(name='x', shape=(3, 4), dtype=float32)"
    assert repr(m) == "<ingot.Module <bytes>: 2 inputs, 3 outputs>"
    assert m.arena_bytes >= 0 and m.arena_bytes % 64 == 0
    assert mlp_module.inputs[0].shape == (2, 16)


def test_several_dtypes_like_torch(models):
    multi = models["multi"]
    m = ingot.load(ingot.compile(multi.path))
    outputs = m(*multi.inputs)
    assert len(outputs) == 3
    for got, want in zip(outputs, multi.outputs):
        close(got, want)
    # Fresh, writable arrays that own their data: a second call does not change the first.
    outputs[0][...] = 7
    again = m(*multi.inputs)
    close(again[0], multi.outputs[0])


def test_compile_to_a_path(models, tmp_path):
    out = tmp_path / "cnn.ingot"
    assert ingot.compile(models["cnn"].path, output=out) == out
    assert ingot.compile(str(models["cnn"].path), output=str(out)) == str(out)
    for source in (out, str(out)):
        m = ingot.load(source)
        assert m.path == str(out)
        close(m(*models["cnn"].inputs)[0], models["cnn"].outputs[0], atol=1e-4)
    assert repr(ingot.load(out)) == f"<ingot.Module {out}: 1 input, 1 output>"


def test_load_from_bytearray_and_memoryview(mlp_bytes, models):
    for source in (bytearray(mlp_bytes), memoryview(mlp_bytes)):
        close(ingot.load(source)(*models["mlp"].inputs)[0], models["mlp"].outputs[0])


def test_output_formats(models, tmp_path):
    mlp = models["mlp"]
    c_path = ingot.compile(mlp.path, output_format="c", output=tmp_path / "mlp.c")
    assert (tmp_path / "mlp.c").exists() and (tmp_path / "mlp.h").exists()
    assert "mlp_invoke" in (tmp_path / "mlp.h").read_text()
    assert c_path == tmp_path / "mlp.c"
    (tmp_path / "lib").mkdir()
    ingot.compile(mlp.path, output_format="static-lib", output=tmp_path / "lib" / "mlp.a")
    assert (tmp_path / "lib" / "mlp.a").read_bytes().startswith(b"!<arch>\n")
    # The executable reads .npy inputs and writes .npy outputs.
    exe = tmp_path / "mlp_exe"
    ingot.compile(mlp.path, output_format="exe", output=exe)
    np.save(tmp_path / "x.npy", mlp.inputs[0])
    subprocess.run([str(exe), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")], check=True)
    close(np.load(tmp_path / "y.npy"), mlp.outputs[0])


def test_external_weights(models, tmp_path):
    out = tmp_path / "mlp.ingot"
    ingot.compile(models["mlp"].path, output=out, weights="external")
    assert (tmp_path / "mlp.ingot.weights").exists()
    close(ingot.load(out)(*models["mlp"].inputs)[0], models["mlp"].outputs[0])
    # From bytes there is no folder to find the weights in.
    with pytest.raises(ingot.InvalidArgumentError, match=r"'<bytes>': the module keeps its weights in the file "
                                                          r"'mlp.ingot.weights'") as e:
        ingot.load(out.read_bytes())
    assert isinstance(e.value, ValueError) and e.value.status == 1
    (tmp_path / "mlp.ingot.weights").write_bytes(b"\0" * 16)
    with pytest.raises(ingot.MalformedModuleError, match="weights file"):
        ingot.load(out)


def test_compile_options(models, tmp_path, capfd):
    mlp = models["mlp"]
    small = ingot.compile(mlp.path, opt="s", strip=True)
    close(ingot.load(small)(*mlp.inputs)[0], mlp.outputs[0])
    close(ingot.load(ingot.compile(mlp.path, opt=0))(*mlp.inputs)[0], mlp.outputs[0])
    close(ingot.load(ingot.compile(mlp.path, target="generic", cc="cc"))(*mlp.inputs)[0], mlp.outputs[0])
    capfd.readouterr()
    ingot.compile(mlp.path, dump_after="import", time_passes=True)
    printed = capfd.readouterr().out
    assert "stage import" in printed and "Gemm" in printed
    ingot.compile(mlp.path, dump_after=["plan", "codegen"], keep_temps=True)
    printed = capfd.readouterr().out
    assert "----- plan -----" in printed and "----- generated C -----" in printed
    kept = [w for line in printed.splitlines() for w in line.split() if w.startswith("/") and "ingot" in w]
    assert kept, printed
    for folder in kept:
        folder = folder.strip("'\".,:")
        if os.path.isdir(folder):
            shutil.rmtree(folder)


def test_input_shapes_fix_dynamic_dimensions(models):
    dyn = models["dynamic"]
    with pytest.raises(ingot.CompileError, match="batch"):
        ingot.compile(dyn.path)
    for shapes in ({"x": [2, 16]}, {"x": (2, 16)}, {"x": "2x16"}, ["x:2x16"]):
        m = ingot.load(ingot.compile(dyn.path, input_shapes=shapes))
        assert m.inputs[0].shape == (2, 16)
        close(m(*dyn.inputs)[0], dyn.outputs[0])
    m = ingot.load(ingot.compile(dyn.path, input_shapes={"x": [5, 16]}))
    x = np.random.default_rng(1).standard_normal((5, 16), dtype=np.float32)
    assert m(x)[0].shape == (5, 8)
    with pytest.raises(TypeError, match="dimensions must be integers"):
        ingot.compile(dyn.path, input_shapes={"x": [2.5, 16]})


# ---- compile errors -----------------------------------------------------------------

@pytest.mark.parametrize("case", ["unknown_op", "garbage", "target", "opt", "shape", "twice", "format"])
def test_compile_errors_carry_the_cli_message(case, models, tmp_path, ingot_exe):
    model = models["mlp"].path
    out = tmp_path / "out.ingot"
    kwargs, flags = {}, []
    if case in ("unknown_op", "garbage"):
        model = models[case].path
    elif case == "target":
        kwargs, flags = {"target": "pdp11"}, ["--target=pdp11"]
    elif case == "opt":
        kwargs, flags = {"opt": "3"}, ["-O3"]
    elif case == "shape":
        kwargs, flags = {"input_shapes": ["x:2x-16"]}, ["--input-shape=x:2x-16"]
    elif case == "twice":
        kwargs, flags = {"input_shapes": ["x:2x16", "x:2x16"]}, ["--input-shape=x:2x16", "--input-shape=x:2x16"]
    elif case == "format":
        kwargs = {"output_format": "c", "weights": "external"}
        model = models["unknown_op"].path
        flags = ["--output-format=c", "--weights=external"]
    expected = cli_error(ingot_exe, "compile", model, "-o", out, *flags)
    with pytest.raises(ingot.CompileError) as e:
        ingot.compile(model, output=out, **kwargs)
    assert str(e.value) == expected
    assert isinstance(e.value, ingot.Error)
    assert not out.exists()
    if case == "unknown_op":
        assert "NoSuchOp" in expected


def test_compile_argument_errors(models, tmp_path):
    mlp = models["mlp"].path
    with pytest.raises(ingot.CompileError, match="cannot open model '/nonexistent/m.onnx'"):
        ingot.compile("/nonexistent/m.onnx")
    with pytest.raises(ingot.CompileError, match="--workers '99'"):
        ingot.compile(mlp, workers=99)
    with pytest.raises(ingot.CompileError, match="--workers '100000000000000000000'"):
        ingot.compile(mlp, workers=10**20)
    with pytest.raises(ValueError, match="workers must be at least 1"):
        ingot.compile(mlp, workers=0)
    with pytest.raises(ValueError, match="workers must be a count or 'host', got 'all'"):
        ingot.compile(mlp, workers="all")
    with pytest.raises(TypeError, match="workers must be an int or 'host', got float"):
        ingot.compile(mlp, workers=2.0)
    with pytest.raises(ValueError, match="output_format='c' writes files; give output=PATH"):
        ingot.compile(mlp, output_format="c")
    with pytest.raises(ValueError, match="weights='external' writes a file beside the module"):
        ingot.compile(mlp, weights="external")
    with pytest.raises(ingot.CompileError, match="--output-format must be module, c, static-lib or exe"):
        ingot.compile(mlp, output_format="wasm", output=tmp_path / "x")
    with pytest.raises(ingot.CompileError, match="--weights must be"):
        ingot.compile(mlp, weights="maybe")
    with pytest.raises(ingot.CompileError, match="-o: value '-x' looks like a flag"):
        ingot.compile(mlp, output="-x")
    with pytest.raises(ingot.CompileError, match="-o: empty output path"):
        ingot.compile(mlp, output="")
    with pytest.raises(ingot.CompileError):
        ingot.compile(mlp, cc="/nonexistent/cc")
    with pytest.raises(ingot.CompileError, match="--dump-after"):
        ingot.compile(mlp, dump_after="no_such_pass")
    with pytest.raises(TypeError, match="expected a path to an .onnx file or an onnx.ModelProto, got int"):
        ingot.compile(42)
    with pytest.raises(TypeError):
        ingot.compile(mlp, no_such_option=True)


# ---- load errors: each runtime status is its own exception ----------------------------

def test_status_exceptions_are_mapped():
    table = {ingot.InvalidArgumentError: (1, ValueError), ingot.MalformedModuleError: (2, ValueError),
             ingot.VersionMismatchError: (3, None), ingot.UnsupportedError: (4, None),
             ingot.OutOfRangeError: (5, None), ingot.FileError: (6, OSError)}
    for cls, (status, builtin) in table.items():
        assert issubclass(cls, ingot.Error) and cls.status == status
        assert builtin is None or issubclass(cls, builtin)
    assert issubclass(ingot.CompileError, ingot.Error) and not issubclass(ingot.CompileError, ValueError)


def test_missing_file(tmp_path):
    with pytest.raises(ingot.FileError, match=f"cannot open '{tmp_path}/none.ingot': No such file") as e:
        ingot.load(tmp_path / "none.ingot")
    assert isinstance(e.value, OSError) and e.value.status == 6
    with pytest.raises(ingot.FileError, match="not a regular file"):
        ingot.load(tmp_path)


def test_malformed_modules(mlp_bytes, tmp_path):
    with pytest.raises(ingot.MalformedModuleError, match=r"'<bytes>': malformed module: not an ingot module"):
        ingot.load(b"not a module at all")
    with pytest.raises(ingot.MalformedModuleError, match="malformed module"):
        ingot.load(b"")
    with pytest.raises(ingot.MalformedModuleError, match="truncated"):
        ingot.load(mlp_bytes[:-1])
    damaged = bytearray(mlp_bytes)
    damaged[len(damaged) // 2] ^= 0xFF
    with pytest.raises(ingot.MalformedModuleError, match="checksum mismatch"):
        ingot.load(bytes(damaged))
    (tmp_path / "bad.ingot").write_bytes(bytes(damaged))
    with pytest.raises(ingot.MalformedModuleError, match=f"'{tmp_path}/bad.ingot'"):
        ingot.load(tmp_path / "bad.ingot")


def test_version_mismatch_names_both_versions(mlp_bytes, tmp_path):
    other = bytearray(mlp_bytes)
    struct.pack_into("<I", other, 12, ingot.ABI_VERSION + 1)
    with pytest.raises(ingot.VersionMismatchError,
                       match=f"module runtime ABI version {ingot.ABI_VERSION + 1}, "
                             f"this runtime implements {ingot.ABI_VERSION}") as e:
        ingot.load(bytes(other))
    assert e.value.status == 3
    (tmp_path / "abi.ingot").write_bytes(bytes(other))
    with pytest.raises(ingot.VersionMismatchError, match="abi.ingot': module runtime ABI version"):
        ingot.load(tmp_path / "abi.ingot")
    other = bytearray(mlp_bytes)
    struct.pack_into("<I", other, 8, ingot.MODULE_FORMAT_VERSION + 5)
    with pytest.raises(ingot.VersionMismatchError,
                       match=f"module format version {ingot.MODULE_FORMAT_VERSION + 5}, "
                             f"this runtime reads {ingot.MODULE_FORMAT_VERSION}"):
        ingot.load(bytes(other))


def test_module_for_another_cpu(models):
    firmware = ingot.compile(models["mlp"].path, target="cortex-m4")
    with pytest.raises(ingot.UnsupportedError, match="module targets cortex-m, this host is") as e:
        ingot.load(firmware)
    assert e.value.status == 4


def test_load_wrong_type():
    with pytest.raises(TypeError, match="expected a path .* or bytes, got int"):
        ingot.load(3)
    with pytest.raises(TypeError):
        ingot.load()


# ---- call errors and copies --------------------------------------------------------

def test_wrong_inputs_name_the_input(models):
    multi = models["multi"]
    m = ingot.load(ingot.compile(multi.path))
    x, idx = multi.inputs
    with pytest.raises(ValueError, match=r"^input 0 \('x'\): expected 3x4xf32, got 3x5xf32$"):
        m(np.zeros((3, 5), np.float32), idx)
    with pytest.raises(ValueError, match=r"^input 0 \('x'\): expected 3x4xf32, got 3x4xfloat64$"):
        m(x.astype(np.float64), idx)
    with pytest.raises(ValueError, match=r"^input 1 \('idx'\): expected 5xi64, got 5xi32$"):
        m(x, idx.astype(np.int32))
    with pytest.raises(ValueError, match=r"^input 1 \('idx'\): expected 5xi64, got i64$"):
        m(x, np.int64(3))
    with pytest.raises(ValueError, match=r"input 0 \('x'\): expected 3x4xf32, got 3x4x>f4"):
        m(x.astype(">f4"), idx)
    with pytest.raises(ValueError, match=r"input 0 \('x'\): expected 3x4xf32, got 3x4xfloat64"):
        m(x.tolist(), idx)  # lists become float64 arrays: values are never converted
    with pytest.raises(ValueError, match=r"^the module has 2 inputs \(0 'x': 3x4xf32, 1 'idx': 5xi64\); got 1 array$"):
        m(x)
    with pytest.raises(ValueError, match=r"got 3 arrays$"):
        m(x, idx, idx)


def test_arrays_that_are_not_contiguous_are_copied(mlp_module, models):
    mlp = models["mlp"]
    x = mlp.inputs[0]
    want = mlp_module(x)[0]
    wide = np.zeros((2, 32), np.float32)
    wide[:, ::2] = x
    strided = wide[:, ::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(mlp_module(strided)[0], want)
    fortran = np.asfortranarray(x)
    assert not fortran.flags.c_contiguous
    np.testing.assert_array_equal(mlp_module(fortran)[0], want)
    raw = np.zeros(x.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(np.float32).reshape(x.shape)
    unaligned[...] = x
    assert not unaligned.flags.aligned
    np.testing.assert_array_equal(mlp_module(unaligned)[0], want)
    before = x.copy()
    mlp_module(x)
    np.testing.assert_array_equal(x, before)  # inputs are read only


# ---- bench --------------------------------------------------------------------------

def test_bench_reports_what_the_cli_reports(models, tmp_path, ingot_exe):
    path = tmp_path / "mlp.ingot"
    ingot.compile(models["mlp"].path, output=path)
    m = ingot.load(path)
    r = cli(ingot_exe, "bench", path, "--iterations=20", "--json")
    assert r.returncode == 0, r.stderr
    from_cli = json.loads(r.stdout)
    report = m.bench(iterations=20)
    assert list(report) == list(from_cli)
    for key in ("module", "iterations", "warmup", "inputs", "arena_bytes", "unit", "seed"):
        assert report[key] == from_cli[key], key
    assert report["min"] <= report["median"] <= report["p90"] <= report["p99"] <= report["max"]
    assert report["min"] <= report["mean"] <= report["max"] and report["stddev"] >= 0

    given = m.bench(iterations=5, warmup=0, inputs=models["mlp"].inputs)
    assert given["inputs"] == "given" and "seed" not in given and given["warmup"] == 0
    assert m.bench(iterations=3, seed=7)["seed"] == 7
    from_bytes = ingot.load(path.read_bytes()).bench(iterations=1)
    assert from_bytes["module"] == "<bytes>"


def test_bench_errors(mlp_module):
    with pytest.raises(ValueError, match="iterations must be at least 1, got 0"):
        mlp_module.bench(iterations=0)
    with pytest.raises(ValueError, match="warmup must be at least 0, got -1"):
        mlp_module.bench(warmup=-1)
    with pytest.raises(ValueError, match=r"input 0 \('x'\): expected 2x16xf32, got 16xf32"):
        mlp_module.bench(inputs=[np.zeros(16, np.float32)])


# ---- threads ------------------------------------------------------------------------

def test_threads_share_a_module(models):
    """One module, a context per concurrent call: every result equals a one-thread run."""
    cnn = models["cnn"]
    m = ingot.load(ingot.compile(cnn.path))
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((1, 3, 16, 16), dtype=np.float32) for _ in range(8)]
    want = [m(x)[0] for x in inputs]
    results = {}
    errors = []

    def work(t):
        try:
            for k in range(20):
                i = (t + k) % len(inputs)
                results.setdefault(t, []).append((i, m(inputs[i])[0]))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sum(len(v) for v in results.values()) == 80
    for runs in results.values():
        for i, got in runs:
            np.testing.assert_array_equal(got, want[i])
    assert 1 <= m.context_count <= 5  # the load's own context plus at most one per thread


def _runs_during(call):
    """How often this thread ran while another thread ran |call|. The switch interval is
    long, so this thread gets the GIL during the call only if the call lets go of it."""
    window = {}

    def work():
        window["start"] = time.perf_counter()
        call()
        window["end"] = time.perf_counter()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        stamps = []
        t = threading.Thread(target=work)
        t.start()
        while t.is_alive():
            stamps.append(time.perf_counter())
        t.join()
    finally:
        sys.setswitchinterval(old)
    return len([s for s in stamps if window["start"] < s < window["end"]])


def test_the_gil_is_released_while_the_model_runs(models, tmp_path):
    m = ingot.load(ingot.compile(models["cnn"].path))
    per_run = m.bench(iterations=20)["median"] * 1e-6
    iterations = max(20, int(0.3 / max(per_run, 1e-7)))
    assert _runs_during(lambda: m.bench(iterations=iterations, warmup=0)) > 100

    # One call long enough to see: a 256x2048 by 2048x2048 product (2 GFLOP).
    rng = np.random.default_rng(5)
    b = onnx.numpy_helper.from_array(rng.standard_normal((2048, 2048), dtype=np.float32) * 0.01, "b")
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["a", "b"], ["c"])], "big",
        [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [256, 2048])],
        [onnx.helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [256, 2048])], [b])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    model.ir_version = 8
    big = ingot.load(ingot.compile(model))
    a = rng.standard_normal((256, 2048), dtype=np.float32)
    got = []
    assert _runs_during(lambda: got.append(big(a)[0])) > 10
    np.testing.assert_allclose(got[0], a @ onnx.numpy_helper.to_array(b), rtol=1e-3, atol=1e-3)


def test_workers_give_the_same_bits(tmp_path):
    """A convolution big enough to split: 2 workers run on 2 threads, same bits as 1."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(64, 64, 3, padding=1)).eval()
    x = torch.randn(1, 32, 56, 56)
    path = tmp_path / "conv.onnx"
    torch.onnx.export(net, x, str(path), input_names=["x"], output_names=["y"], opset_version=13)
    one = ingot.load(ingot.compile(path, workers=1))
    two = ingot.load(ingot.compile(path, workers=2))
    assert one.workers == 1 and two.workers == 2
    # 'host': one worker per core this process may use (this convolution splits on any).
    host = ingot.load(ingot.compile(path, workers="host"))
    assert 1 <= host.workers <= len(os.sched_getaffinity(0))
    a = one(x.numpy())[0]
    for _ in range(3):
        b = two(x.numpy())[0]
        assert np.array_equal(a, b)
    close(a, net(x).detach().numpy(), atol=1e-3, rtol=1e-3)
