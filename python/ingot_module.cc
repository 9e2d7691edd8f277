// The Python module `ingot`: compile ONNX models and run .ingot modules on numpy arrays.
//
// A thin layer over what the command line uses: compile goes through the same argument
// checks (tools::compile_options) and driver; load through the hosted runtime
// (tools::HostedModule); calls through ingot_invoke; bench through the same timing loop
// and report as `ingot bench --json` (tools/bench.h). docs/python.md is the reference.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/driver/driver.h"
#include "compiler/driver/version.h"
#include "compiler/ir/error.h"
#include "ingot/abi.h"
#include "ingot/hosted.h"
#include "ingot/runtime.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/module_view.h"
#include "tools/session.h"
#include "tools/tensor_io.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace ingot::python {
namespace {

using tools::TensorInfo;

// ---- exceptions -------------------------------------------------------------------

// ingot.Error and its subclasses, created once at import. Each status subclass also
// derives from the builtin that fits (ValueError, OSError), so plain `except
// ValueError` catches a malformed module too.
struct Exceptions {
  PyObject* error = nullptr;
  PyObject* compile_error = nullptr;
  PyObject* by_status[INGOT_IO_ERROR + 1] = {};
};
Exceptions exceptions;

PyObject* new_exception(py::module_& m, const char* name, std::vector<PyObject*> bases, const char* doc,
                        std::optional<int> status) {
  py::tuple base_tuple(bases.size());
  for (size_t i = 0; i < bases.size(); ++i) base_tuple[i] = py::reinterpret_borrow<py::object>(bases[i]);
  py::dict attrs;
  if (status) attrs["status"] = *status;
  const std::string qualified = std::string("ingot.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), attrs.ptr());
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(type));
  return type;
}

void create_exceptions(py::module_& m) {
  exceptions.error =
      new_exception(m, "Error", {PyExc_Exception}, "Base of every error ingot raises itself.", std::nullopt);
  exceptions.compile_error = new_exception(
      m, "CompileError", {exceptions.error},
      "ingot.compile failed; the message is the line `ingot compile` prints after 'error: '.", std::nullopt);
  struct Entry {
    ingot_status_t status;
    const char* name;
    PyObject* builtin;
    const char* doc;
  };
  const Entry entries[] = {
      {INGOT_INVALID_ARGUMENT, "InvalidArgumentError", PyExc_ValueError,
       "INGOT_INVALID_ARGUMENT: the runtime was handed something it cannot use."},
      {INGOT_MALFORMED, "MalformedModuleError", PyExc_ValueError,
       "INGOT_MALFORMED: the module (or its weights file) fails a structural or checksum check."},
      {INGOT_VERSION_MISMATCH, "VersionMismatchError", nullptr,
       "INGOT_VERSION_MISMATCH: the module's format or ABI version differs from this runtime's."},
      {INGOT_UNSUPPORTED, "UnsupportedError", nullptr,
       "INGOT_UNSUPPORTED: the module needs an architecture or ISA features this CPU lacks."},
      {INGOT_OUT_OF_RANGE, "OutOfRangeError", nullptr, "INGOT_OUT_OF_RANGE: a buffer is too small."},
      {INGOT_IO_ERROR, "FileError", PyExc_OSError, "INGOT_IO_ERROR: a file could not be read or mapped."},
  };
  for (const Entry& e : entries) {
    std::vector<PyObject*> bases = {exceptions.error};
    if (e.builtin != nullptr) bases.push_back(e.builtin);
    exceptions.by_status[e.status] = new_exception(m, e.name, bases, e.doc, static_cast<int>(e.status));
  }
}

// Raises the exception for |status| with |message| (one line, the runtime's words).
[[noreturn]] void raise_status(ingot_status_t status, const std::string& message) {
  PyObject* type = status >= 0 && status <= INGOT_IO_ERROR ? exceptions.by_status[status] : nullptr;
  if (type == nullptr) type = exceptions.error;
  PyErr_SetString(type, tools::one_line(message).c_str());
  throw py::error_already_set();
}

[[noreturn]] void raise_value_error(const std::string& message) { throw py::value_error(tools::one_line(message)); }

// ---- dtypes -----------------------------------------------------------------------

py::dtype numpy_dtype(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32:
      return py::dtype("float32");
    case INGOT_DTYPE_I64:
      return py::dtype("int64");
    case INGOT_DTYPE_I32:
      return py::dtype("int32");
    case INGOT_DTYPE_BOOL:
      return py::dtype("bool");
    case INGOT_DTYPE_U8:
      return py::dtype("uint8");
    case INGOT_DTYPE_I8:
      return py::dtype("int8");
  }
  throw Error(fmt::format("the module uses dtype #{}, which this module does not know", static_cast<int>(dtype)));
}

// The ingot dtype of a numpy dtype in this machine's byte order; none for the rest
// (float64, float16, big-endian data, ...).
std::optional<ingot_dtype_t> ingot_dtype(const py::dtype& dtype) {
  const char order = dtype.byteorder();
  if (order != '=' && order != '|') return std::nullopt;  // '<' never appears for native data
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  if (kind == 'f' && size == 4) return INGOT_DTYPE_F32;
  if (kind == 'i' && size == 8) return INGOT_DTYPE_I64;
  if (kind == 'i' && size == 4) return INGOT_DTYPE_I32;
  if (kind == 'i' && size == 1) return INGOT_DTYPE_I8;
  if (kind == 'u' && size == 1) return INGOT_DTYPE_U8;
  if (kind == 'b' && size == 1) return INGOT_DTYPE_BOOL;
  return std::nullopt;
}

std::vector<int64_t> array_dims(const py::array& array) {
  std::vector<int64_t> dims;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) dims.push_back(static_cast<int64_t>(array.shape(i)));
  return dims;
}

// The arrays a call runs on: checked against the signature and, where they are not
// C-contiguous and aligned, copied (the only copy a call makes).
struct BoundInputs {
  std::vector<py::array> arrays;  // keeps the data alive while the model runs
  std::vector<const void*> pointers;
};

BoundInputs bind_inputs(const std::vector<TensorInfo>& signature, const py::sequence& values) {
  if (static_cast<size_t>(py::len(values)) != signature.size()) {
    raise_value_error(fmt::format("the module has {}; got {} array{}", tools::describe_signature("input", signature),
                                  py::len(values), py::len(values) == 1 ? "" : "s"));
  }
  const py::module_ numpy = py::module_::import("numpy");
  BoundInputs bound;
  for (size_t i = 0; i < signature.size(); ++i) {
    const TensorInfo& info = signature[i];
    py::array array = numpy.attr("asarray")(values[i]);
    const std::vector<int64_t> dims = array_dims(array);
    const std::optional<ingot_dtype_t> dtype = ingot_dtype(array.dtype());
    if (!dtype || *dtype != info.dtype || dims != info.dims) {
      std::string got;
      if (dtype) {
        got = tools::format_type(dims, *dtype);
      } else {
        const std::string name = py::str(array.dtype());
        got = dims.empty() ? name : tools::format_dims(dims) + "x" + name;
      }
      try {
        tools::fail_tensor_type("input", i, info, got);
      } catch (const Error& e) {
        raise_value_error(e.what());
      }
    }
    const int flags = py::array::c_style;
    const bool ready =
        (array.flags() & flags) == flags && (array.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
    if (!ready) array = numpy.attr("array")(array, py::arg("order") = "C", py::arg("copy") = true);
    bound.pointers.push_back(array.data());
    bound.arrays.push_back(std::move(array));
  }
  if (bound.pointers.empty()) bound.pointers.push_back(nullptr);  // never hand the runtime a null array
  return bound;
}

// ---- Module -----------------------------------------------------------------------

// One arena and context: what one call at a time needs. A plan for several workers
// gets a hosted context instead, whose threads (made once, asleep between calls) run
// the workers.
struct Context {
  tools::AlignedBuffer arena;
  ingot_context_t context{};
  ingot_hosted_context_t* threaded = nullptr;
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() { ingot_hosted_context_destroy(threaded); }
  ingot_status_t invoke(const void* const* inputs, void* const* outputs) {
    return threaded ? ingot_hosted_invoke(threaded, inputs, outputs) : ingot_invoke(&context, inputs, outputs);
  }
};

// A loaded module. The module itself is immutable and shared by every call; each call
// borrows a context (its own arena) from a pool and returns it, so calls from several
// threads run at once, each on its own context, and a thread that calls again reuses
// one. The pool holds as many contexts as calls ever ran at the same time.
class Module {
 public:
  Module(std::unique_ptr<tools::HostedModule> hosted, std::optional<std::string> path)
      : hosted_(std::move(hosted)), path_(std::move(path)) {
    inputs_ = tools::module_inputs(module());
    outputs_ = tools::module_outputs(module());
    arena_bytes_ = ingot_module_arena_size(&module());
    release(acquire());  // a module that cannot get a context fails at load, not at the first call
  }

  const ingot_module_t& module() const { return hosted_->module(); }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::optional<std::string>& path() const { return path_; }
  const std::string& label() const { return hosted_->path(); }
  size_t arena_bytes() const { return arena_bytes_; }
  uint32_t workers() const { return module().plan->worker_count; }
  size_t context_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return created_;
  }

  py::list call(const py::args& args) {
    BoundInputs inputs = bind_inputs(inputs_, args);
    std::vector<py::array> results;
    std::vector<void*> outputs;
    for (const TensorInfo& info : outputs_) {
      std::vector<py::ssize_t> shape(info.dims.begin(), info.dims.end());
      py::array array(numpy_dtype(info.dtype), shape);
      outputs.push_back(array.mutable_data());
      results.push_back(std::move(array));
    }
    if (outputs.empty()) outputs.push_back(nullptr);
    invoke_released(inputs.pointers.data(), outputs.data());
    py::list list;
    for (py::array& a : results) list.append(std::move(a));
    return list;
  }

  py::dict bench(int iterations, int warmup, uint64_t seed, const std::optional<py::sequence>& given) {
    try {
      tools::check_bench_counts(iterations, warmup);
    } catch (const Error& e) {
      raise_value_error(e.what());
    }
    const bool random_inputs = !given.has_value() && !inputs_.empty();
    BoundInputs bound;
    std::vector<tools::Tensor> generated;
    if (random_inputs) {
      generated = tools::random_tensors(inputs_, seed);
      for (const tools::Tensor& t : generated) bound.pointers.push_back(t.bytes.data());
    } else {
      bound = bind_inputs(inputs_, given ? *given : py::sequence(py::tuple()));
    }
    if (bound.pointers.empty()) bound.pointers.push_back(nullptr);
    std::vector<tools::AlignedBuffer> output_buffers;
    std::vector<void*> outputs;
    for (const TensorInfo& info : outputs_) {
      output_buffers.emplace_back(info.byte_size);
      outputs.push_back(output_buffers.back().data());
    }
    if (outputs.empty()) outputs.push_back(nullptr);

    std::unique_ptr<Context> context = acquire();
    tools::LatencyStats stats;
    ingot_status_t status = INGOT_OK;
    {
      py::gil_scoped_release released;
      stats = tools::time_invocations(
          [&] {
            if (status == INGOT_OK) status = context->invoke(bound.pointers.data(), outputs.data());
          },
          iterations, warmup);
    }
    release(std::move(context));
    check_invoke(status);

    tools::BenchSetup setup;
    setup.module = label();
    setup.iterations = iterations;
    setup.warmup = warmup;
    setup.random_inputs = random_inputs;
    setup.seed = seed;
    setup.arena_bytes = arena_bytes_;
    const py::object loads = py::module_::import("json").attr("loads");
    return loads(tools::bench_json(setup, stats).dump());
  }

 private:
  std::unique_ptr<Context> acquire() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<Context> context = std::move(free_.back());
        free_.pop_back();
        return context;
      }
    }
    auto context = std::make_unique<Context>();
    ingot_status_t status;
    if (module().plan->worker_count > 1) {
      status = ingot_hosted_context_create(&module(), 0, &context->threaded);
    } else {
      context->arena = tools::AlignedBuffer(arena_bytes_);
      status = ingot_context_initialize(&module(), context->arena.data(), context->arena.size(), &context->context);
    }
    if (status != INGOT_OK) {
      try {
        tools::check_context_status(status, label(), context->arena.size());
      } catch (const tools::StatusError& e) {
        raise_status(e.status(), e.what());
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++created_;
    return context;
  }

  void release(std::unique_ptr<Context> context) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(context));
  }

  void check_invoke(ingot_status_t status) {
    if (status == INGOT_OK) return;
    try {
      tools::check_invoke_status(status, label());
    } catch (const tools::StatusError& e) {
      raise_status(e.status(), e.what());
    }
  }

  // Runs the plan once on a borrowed context without holding the GIL.
  void invoke_released(const void* const* inputs, void* const* outputs) {
    std::unique_ptr<Context> context = acquire();
    ingot_status_t status;
    {
      py::gil_scoped_release released;
      status = context->invoke(inputs, outputs);
    }
    release(std::move(context));
    check_invoke(status);
  }

  std::unique_ptr<tools::HostedModule> hosted_;
  std::optional<std::string> path_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  size_t arena_bytes_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Context>> free_;
  size_t created_ = 0;
};

// ingot.load(path_or_bytes)
std::unique_ptr<Module> load(const py::object& source) {
  try {
    if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
        py::isinstance<py::memoryview>(source)) {
      py::buffer_info buffer = py::reinterpret_borrow<py::buffer>(source).request();
      if (buffer.ndim > 1 || (buffer.ndim == 1 && buffer.strides[0] != buffer.itemsize)) {
        raise_value_error("ingot.load: the bytes must be one contiguous buffer");
      }
      const size_t size = static_cast<size_t>(buffer.size * buffer.itemsize);
      std::unique_ptr<tools::HostedModule> hosted;
      {
        py::gil_scoped_release released;
        hosted = std::make_unique<tools::HostedModule>(buffer.ptr, size, "<bytes>");
      }
      return std::make_unique<Module>(std::move(hosted), std::nullopt);
    }
    if (py::isinstance<py::str>(source) || py::hasattr(source, "__fspath__")) {
      const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
      std::unique_ptr<tools::HostedModule> hosted;
      {
        py::gil_scoped_release released;
        hosted = std::make_unique<tools::HostedModule>(path);
      }
      return std::make_unique<Module>(std::move(hosted), path);
    }
  } catch (const tools::StatusError& e) {
    raise_status(e.status(), e.what());
  } catch (const Error& e) {
    PyErr_SetString(exceptions.error, tools::one_line(e.what()).c_str());
    throw py::error_already_set();
  }
  throw py::type_error(fmt::format("ingot.load: expected a path (str or os.PathLike) or bytes, got {}",
                                   std::string(py::str(py::type::of(source).attr("__name__")))));
}

// ---- compile ----------------------------------------------------------------------

// A private temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ingot-py-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      fail("cannot create a temporary folder in {}", fs::temp_directory_path().string());
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string fspath(const py::object& value) { return py::str(py::module_::import("os").attr("fspath")(value)); }

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write '{}'", path.string());
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// "x:1x3x8x8" for ("x", [1, 3, 8, 8]); the CLI's parser then checks it.
std::string input_shape_text(const std::string& name, const py::handle& dims) {
  if (py::isinstance<py::str>(dims)) return name + ":" + std::string(py::str(dims));
  std::string text;
  for (const py::handle& d : py::reinterpret_borrow<py::iterable>(dims)) {
    if (!py::isinstance<py::int_>(d)) {
      throw py::type_error(
          fmt::format("input_shapes['{}']: dimensions must be integers, got {}", name, std::string(py::repr(d))));
    }
    text += (text.empty() ? "" : "x") + std::string(py::str(d));
  }
  return name + ":" + text;
}

py::object compile(const py::object& model, const std::string& target, const py::object& workers,
                   const std::string& output_format,
                   const py::object& output, const std::string& weights, const py::object& opt, bool strip,
                   const py::object& input_shapes, const py::object& dump_after, bool time_passes,
                   const std::optional<std::string>& cc, bool keep_temps) {
  // A count, or 'host' (the physical cores this process may use), as --workers takes.
  std::string workers_text;
  if (py::isinstance<py::str>(workers)) {
    workers_text = py::str(workers);
    if (workers_text != "host")
      raise_value_error(fmt::format("ingot.compile: workers must be a count or 'host', got '{}'", workers_text));
  } else if (py::isinstance<py::int_>(workers) && !py::isinstance<py::bool_>(workers)) {
    // As text, so that a count past the range gets the CLI's message (any size of int).
    workers_text = py::str(workers);
    if (workers.attr("__lt__")(py::int_(1)).cast<bool>())
      raise_value_error(fmt::format("ingot.compile: workers must be at least 1, got {}", workers_text));
  } else {
    throw py::type_error(fmt::format("ingot.compile: workers must be an int or 'host', got {}",
                                     std::string(py::str(py::type::of(workers).attr("__name__")))));
  }
  const bool to_bytes = output.is_none();
  if (to_bytes && output_format != "module") {
    raise_value_error(fmt::format("ingot.compile: output_format='{}' writes files; give output=PATH", output_format));
  }
  if (to_bytes && weights == "external") {
    raise_value_error("ingot.compile: weights='external' writes a file beside the module; give output=PATH");
  }
  try {
    TempDir temp;
    tools::CompileArgs args;
    if (py::isinstance<py::str>(model) || py::hasattr(model, "__fspath__")) {
      args.model = fspath(model);
    } else if (py::hasattr(model, "SerializeToString")) {
      args.model = (temp.path() / "model.onnx").string();
      write_bytes(args.model, py::bytes(model.attr("SerializeToString")()));
    } else {
      throw py::type_error(fmt::format("ingot.compile: expected a path to an .onnx file or an onnx.ModelProto, got {}",
                                       std::string(py::str(py::type::of(model).attr("__name__")))));
    }
    args.output = to_bytes ? (temp.path() / "model.ingot").string() : fspath(output);
    args.target = target;
    args.output_format = output_format;
    args.weights = weights;
    args.opt = py::str(opt);
    args.strip = strip;
    if (!input_shapes.is_none()) {
      if (py::isinstance<py::dict>(input_shapes)) {
        for (const auto& [name, dims] : py::reinterpret_borrow<py::dict>(input_shapes)) {
          args.input_shapes.push_back(input_shape_text(py::str(name), dims));
        }
      } else {
        for (const py::handle& text : py::reinterpret_borrow<py::iterable>(input_shapes)) {
          args.input_shapes.push_back(py::str(text));
        }
      }
    }
    if (py::isinstance<py::str>(dump_after)) {
      args.dump_after.push_back(py::str(dump_after));
    } else if (!dump_after.is_none()) {
      for (const py::handle& pass : py::reinterpret_borrow<py::iterable>(dump_after)) {
        args.dump_after.push_back(py::str(pass));
      }
    }
    args.time_passes = time_passes;
    args.cc = cc.value_or("");
    args.keep_temps = keep_temps;

    args.workers = workers_text;
    driver::CompileOptions options = tools::compile_options(args);
    std::string bytes;
    {
      py::gil_scoped_release released;
      driver::compile(options);
      if (to_bytes) bytes = read_bytes(args.output);
    }
    if (!to_bytes) return output;
    return py::bytes(bytes);
  } catch (const py::error_already_set&) {
    throw;  // a Python exception (from the model object, a path, ...) stays what it is
  } catch (const py::builtin_exception&) {
    throw;  // TypeError, ValueError raised above
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    PyErr_SetString(exceptions.compile_error, tools::one_line(e.what()).c_str());
    throw py::error_already_set();
  }
}

py::object tensor_info_dtype(const TensorInfo& info) { return numpy_dtype(info.dtype); }

py::tuple tensor_info_shape(const TensorInfo& info) {
  py::tuple shape(info.dims.size());
  for (size_t i = 0; i < info.dims.size(); ++i) shape[i] = py::int_(info.dims[i]);
  return shape;
}

}  // namespace
}  // namespace ingot::python

PYBIND11_MODULE(ingot, m) {
  using namespace ingot::python;
  namespace tools = ingot::tools;
  m.doc() =
      "ingot: compile ONNX models ahead of time and run the compiled modules on numpy arrays.\n"
      "See docs/python.md.";
  m.attr("__version__") = ingot::driver::compiler_version();
  m.attr("ABI_VERSION") = static_cast<int>(INGOT_ABI_VERSION);
  m.attr("MODULE_FORMAT_VERSION") = static_cast<int>(INGOT_MODULE_FORMAT_VERSION);
  create_exceptions(m);

  m.def("version_info", &ingot::driver::version_text,
        "The report `ingot --version` prints: compiler version, module format and ABI versions, build flags.");

  py::class_<TensorInfo>(m, "TensorInfo", "Name, shape and dtype of a module input or output.")
      .def_property_readonly("name", [](const TensorInfo& t) { return t.name; })
      .def_property_readonly("shape", &tensor_info_shape)
      .def_property_readonly("dtype", &tensor_info_dtype)
      .def_property_readonly("nbytes", [](const TensorInfo& t) { return t.byte_size; })
      .def("__repr__", [](const TensorInfo& t) {
        return fmt::format("TensorInfo(name={}, shape={}, dtype={})", std::string(py::repr(py::str(t.name))),
                           std::string(py::repr(tensor_info_shape(t))), std::string(py::str(tensor_info_dtype(t))));
      });

  py::class_<Module>(m, "Module",
                     "A loaded .ingot module. Calling it runs the model: module(*arrays) -> list of arrays.\n"
                     "Thread-safe: calls from several threads run at once, each on a context (arena) of its own.")
      .def_property_readonly("inputs", [](const Module& self) { return self.inputs(); })
      .def_property_readonly("outputs", [](const Module& self) { return self.outputs(); })
      .def_property_readonly(
          "path", [](const Module& self) { return self.path(); },
          "The file the module was loaded from; None when loaded from bytes.")
      .def_property_readonly("arena_bytes", &Module::arena_bytes, "Bytes of arena each context holds.")
      .def_property_readonly(
          "workers", [](const Module& m) { return m.workers(); },
          "Step lists of the plan; a call runs them on that many threads (made once per context).")
      .def_property_readonly("context_count", &Module::context_count,
                             "Contexts created so far: as many as calls ever ran at the same time.")
      .def("__call__", &Module::call,
           "Runs the model once. One numpy array (or array-like) per input, in signature order, with exactly\n"
           "the input's dtype and shape (ValueError naming the input otherwise; values are never converted).\n"
           "C-contiguous, aligned arrays are read in place; others are copied first. Returns new arrays,\n"
           "one per output. The GIL is released while the model runs.")
      .def("bench", &Module::bench, py::arg("iterations") = 100, py::arg("warmup") = 10, py::arg("seed") = 0,
           py::arg("inputs") = py::none(),
           "Times |iterations| runs after |warmup| untimed ones, on seeded random inputs (as `ingot bench`)\n"
           "or on the given arrays. Returns the dict `ingot bench --json` prints (times in microseconds).")
      .def("__repr__", [](const Module& self) {
        const size_t n = self.inputs().size(), k = self.outputs().size();
        return fmt::format("<ingot.Module {}: {} input{}, {} output{}>", self.label(), n, n == 1 ? "" : "s", k,
                           k == 1 ? "" : "s");
      });

  m.def("load", &load, py::arg("source"),
        "Loads a module from a path (str or os.PathLike) or from bytes (copied). Raises an ingot.Error\n"
        "subclass for the runtime's status: FileError, MalformedModuleError, VersionMismatchError, ...");

  m.def("compile", &compile, py::arg("model"), py::arg("target") = "host", py::arg("workers") = 1,
        py::arg("output_format") = "module", py::kw_only(), py::arg("output") = py::none(),
        py::arg("weights") = "embed", py::arg("opt") = "2", py::arg("strip") = false,
        py::arg("input_shapes") = py::none(), py::arg("dump_after") = py::none(), py::arg("time_passes") = false,
        py::arg("cc") = py::none(), py::arg("keep_temps") = false,
        "Compiles an ONNX model (a path or an onnx.ModelProto) as `ingot compile` does. Without output=,\n"
        "returns the module's bytes (output_format='module' only); with output=PATH, writes the artifact\n"
        "there and returns PATH. workers: a count, or 'host' for the physical cores this process may use.\n"
        "Raises ingot.CompileError with the CLI's one-line message.");
}
