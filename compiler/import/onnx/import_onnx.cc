#include "compiler/import/onnx/import_onnx.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include "compiler/import/confined_path.h"
#include "compiler/ir/checked.h"
#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"

namespace ingot::import {

namespace {

DType dtype_from_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::UINT8: return DType::U8;
    case onnx::TensorProto::BOOL: return DType::Bool;
  }
  fail("{}: element type {} is not supported", what, onnx::TensorProto::DataType_Name(t));
}

std::string read_file(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open {} '{}'", what, path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("cannot read {} '{}'", what, path.string());
  return ss.str();
}

// Converts a TensorProto (raw_data, typed fields or external data) to a Tensor.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::optional<std::filesystem::path>& model_dir) {
  std::string what = fmt::format("tensor '{}'", p.name());
  Tensor t;
  t.dtype = dtype_from_onnx(p.data_type(), what);
  for (int64_t d : p.dims()) {
    if (d < 0) fail("{}: negative dimension", what);
    t.shape.push_back(d);
  }
  // A model can name any dims: the product is overflow-checked and held to the limits
  // every computed tensor obeys, and the data are checked against it before anything
  // is allocated.
  if (t.shape.size() > kMaxTensorRank) fail("{}: rank {} is above the supported maximum {}", what, t.shape.size(), kMaxTensorRank);
  const size_t es = dtype_size(t.dtype);
  size_t n = 1;
  for (int64_t d : t.shape) {
    if (d == 0) n = 0;
  }
  for (int64_t d : t.shape) {
    if (n == 0) break;
    if (static_cast<uint64_t>(d) > static_cast<uint64_t>(kMaxTensorBytes) / n / es)
      fail("{}: shape {} is above the supported maximum of {} bytes", what, shape_str(t.shape), kMaxTensorBytes);
    n *= static_cast<size_t>(d);
  }
  const size_t bytes = n * es;
  auto check_count = [&](size_t got) {
    if (got != n) fail("{}: holds {} values for shape {}", what, got, shape_str(t.shape));
  };
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : p.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = parse_non_negative(kv.value(), what + ": external data offset");
      else if (kv.key() == "length") length = parse_non_negative(kv.value(), what + ": external data length");
    }
    if (location.empty()) fail("{}: external data has no location", what);
    if (!model_dir) fail("{}: external data needs the model's folder (a model read from memory has none)", what);
    const std::filesystem::path file = confined_path(*model_dir, location, what);
    if (length >= 0 && static_cast<uint64_t>(length) != bytes)
      fail("{}: external data length {} does not match {} bytes for shape {}", what, length, bytes, shape_str(t.shape));
    std::error_code ec;
    const uintmax_t file_size = std::filesystem::file_size(file, ec);
    if (ec) fail("{}: cannot read the size of external data file '{}'", what, location);
    if (static_cast<uintmax_t>(offset) > file_size || bytes > file_size - static_cast<uintmax_t>(offset))
      fail("{}: external data file '{}' has {} bytes, too few for {} bytes at offset {}", what, location, file_size,
           bytes, offset);
    t.bytes.resize(bytes);
    std::ifstream in(file, std::ios::binary);
    if (!in) fail("{}: cannot open external data file '{}'", what, location);
    in.seekg(offset);
    in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (static_cast<size_t>(in.gcount()) != t.bytes.size())
      fail("{}: external data file '{}' is too short", what, location);
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes)
      fail("{}: raw data has {} bytes, expected {}", what, p.raw_data().size(), bytes);
    t.bytes.assign(p.raw_data().begin(), p.raw_data().end());
    return t;
  }
  switch (t.dtype) {
    case DType::F32: check_count(p.float_data_size()); break;
    case DType::F64: check_count(p.double_data_size()); break;
    case DType::I64: check_count(p.int64_data_size()); break;
    default: check_count(p.int32_data_size()); break;
  }
  t.bytes.resize(bytes);
  if (n == 0) return t;  // empty repeated fields have no data pointer to copy from
  switch (t.dtype) {
    case DType::F32:
      check_count(p.float_data_size());
      std::memcpy(t.bytes.data(), p.float_data().data(), n * 4);
      break;
    case DType::F64:
      check_count(p.double_data_size());
      std::memcpy(t.bytes.data(), p.double_data().data(), n * 8);
      break;
    case DType::I64:
      check_count(p.int64_data_size());
      std::memcpy(t.bytes.data(), p.int64_data().data(), n * 8);
      break;
    case DType::I32:
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      check_count(p.int32_data_size());
      for (size_t i = 0; i < n; ++i) t.set_from_double(i, p.int32_data(i));
      break;
  }
  return t;
}

AttrValue attr_from_proto(const onnx::AttributeProto& a, const Node& node,
                          const std::optional<std::filesystem::path>& dir) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return a.f();
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::TENSOR: return tensor_from_proto(a.t(), dir);
    case onnx::AttributeProto::STRINGS: {
      // Name lists (an RNN's activations): one comma-separated string.
      std::string joined;
      for (const std::string& s : a.strings()) joined += (joined.empty() ? "" : ",") + s;
      return joined;
    }
    default: break;
  }
  fail("{}: attribute '{}' of type {} is not supported", node.describe(), a.name(),
       onnx::AttributeProto::AttributeType_Name(a.type()));
}

// The default domain's opset the model declares, if it declares one.
bool declares_default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return true;
  return false;
}

// What libonnx's version converter takes for granted and dereferences unchecked when
// it is missing: a default opset, tensor types on the graph's inputs, outputs and
// value_info, every name a node reads or the graph outputs defined before, no
// subgraphs. The checker covers the rest.
bool convertible(const onnx::ModelProto& model) {
  if (!declares_default_opset(model)) return false;
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> defined;
  for (const auto& init : g.initializer()) defined.insert(init.name());
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()}) {
    for (const auto& v : *list) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_elem_type()) return false;
    }
  }
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& node : g.node()) {
    for (const std::string& in : node.input()) {
      if (!in.empty() && !defined.count(in)) return false;
    }
    for (const auto& a : node.attribute()) {
      if (a.has_g() || a.graphs_size() > 0) return false;
    }
    for (const std::string& out : node.output()) defined.insert(out);
  }
  for (const auto& out : g.output()) {
    if (!defined.count(out.name())) return false;
  }
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

// libonnx's version converter, run in a child process: its adapters trust shape
// information a model need not carry and dereference it unchecked (Gemm_6_7 crashes
// on a model that passes every structural check in convertible()), so a crash, a hang
// (60 s) or an exception there must not take the compiler with it. Returns the
// converted model, or nothing when the converter failed in any way.
std::optional<onnx::ModelProto> convert_in_child(const onnx::ModelProto& model, int to_opset) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A crash here ends the child and nothing else: the handlers the parent installed
    // (a sanitizer's, a fuzzer's) would report it as the parent's own.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) ::signal(sig, SIG_DFL);
    ::alarm(60);
    // What the converter prints when it fails (a crash report included) is not ingot's
    // message: the parent says what went wrong in one line.
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDOUT_FILENO);
      ::dup2(null_fd, STDERR_FILENO);
      ::close(null_fd);
    }
    std::string bytes;
    try {
      onnx::ModelProto converted = onnx::version_conversion::ConvertVersion(model, to_opset);
      if (!converted.SerializeToString(&bytes)) ::_exit(3);
    } catch (...) {
      ::_exit(3);
    }
    for (size_t at = 0; at < bytes.size();) {
      const ssize_t n = ::write(fds[1], bytes.data() + at, bytes.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(4);
      at += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string bytes;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  onnx::ModelProto converted;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !converted.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return std::nullopt;
  return converted;
}

// The newest default-domain opset a model may declare.
constexpr int64_t kMaxOpset = 21;

int default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
  return 1;
}

// |path| names the model in messages; |dir| is the folder external data is read from
// (none: the model has no folder, and external data is refused).
std::unique_ptr<Graph> import_model(std::string_view bytes, const std::string& path,
                                    const std::optional<std::filesystem::path>& dir, const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail("'{}' is not a valid ONNX model (protobuf parse failed)", path);
  if (!model.has_graph()) fail("'{}' has no graph", path);

  int opset = default_opset(model);
  {
    // The version the model declares decides which forms its ops take; an opset no
    // ONNX release defined would be read silently under some other version's rules.
    int64_t declared = 1;
    for (const auto& o : model.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") declared = o.version();
    if (declared < 1 || declared > kMaxOpset)
      fail("'{}' declares opset {} of the default domain; ingot reads opsets 1 to {}", path, declared, kMaxOpset);
  }
  if (opset < options.min_opset && opset >= 1 && convertible(model)) {
    // libonnx knows opsets <= 17; older models come up to the table's opset. When the
    // converter cannot handle a model, import as is: the op table reads old forms too.
    // A model the converter would crash on (see convertible and convert_in_child) is
    // imported as is; the checks below refuse it with a message.
    if (std::optional<onnx::ModelProto> converted = convert_in_child(model, options.convert_to_opset)) {
      model = std::move(*converted);
      opset = default_opset(model);
    }
  }

  const onnx::GraphProto& g = model.graph();
  auto graph = std::make_unique<Graph>();
  graph->opset = opset;
  graph->name = g.name().empty() ? "main" : g.name();
  std::map<std::string, Value*> values;
  // What defined each name so far, for messages about a name defined twice.
  std::map<std::string, std::string> defined_by;

  for (const auto& init : g.initializer()) {
    if (init.name().empty()) fail("an initializer has no name");
    if (!defined_by.emplace(init.name(), "an initializer").second)
      fail("initializer '{}' is defined twice", init.name());
    Value* v = graph->add_constant(init.name(), tensor_from_proto(init, dir));
    values[init.name()] = v;
  }
  std::set<std::string> used_overrides;
  std::set<std::string> input_names;
  for (const auto& in : g.input()) {
    if (in.name().empty()) fail("a graph input has no name");
    if (!input_names.insert(in.name()).second) fail("graph input '{}' is declared twice", in.name());
    if (values.count(in.name())) continue;  // an initializer listed as an input
    defined_by[in.name()] = "a graph input";
    std::string what = fmt::format("input '{}'", in.name());
    if (!in.type().has_tensor_type()) fail("{}: only tensor inputs are supported", what);
    const auto& tt = in.type().tensor_type();
    DType dtype = dtype_from_onnx(tt.elem_type(), what);
    Shape shape;
    auto override_it = options.input_shapes.find(in.name());
    if (override_it != options.input_shapes.end()) {
      shape = override_it->second;
      used_overrides.insert(in.name());
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(shape.size()))
        fail("{}: --input-shape gives rank {}, the model says rank {}", what, shape.size(), tt.shape().dim_size());
    } else {
      if (!tt.has_shape()) fail("{} has no shape; fix it with --input-shape={}:DIMS", what, in.name());
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (!d.has_dim_value() || d.dim_value() < 0) {
          std::string param = d.has_dim_param() ? fmt::format(" ('{}')", d.dim_param()) : "";
          fail("{} dimension {}{} is dynamic; fix it with --input-shape={}:DIMS (e.g. 1x...)", what, i, param, in.name());
        }
        shape.push_back(d.dim_value());
      }
    }
    Value* v = graph->add_value(in.name(), dtype, shape);
    values[in.name()] = v;
    graph->inputs.push_back(v);
  }
  for (auto& [name, shape] : options.input_shapes)
    if (!used_overrides.count(name)) fail("--input-shape names '{}', which is not an input of the model", name);

  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& np = g.node(i);
    std::string name = np.name().empty() ? fmt::format("{}_{}", np.op_type(), i) : np.name();
    std::vector<Value*> inputs;
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(in);
      if (it == values.end()) fail("node '{}' ({}) reads '{}', which is not defined before it", name, np.op_type(), in);
      inputs.push_back(it->second);
    }
    if (np.output_size() == 0) fail("node '{}' ({}) has no outputs", name, np.op_type());
    Node* node = graph->add_node(np.op_type(), name, inputs, np.output_size());
    node->opset = opset;
    if (!np.domain().empty() && np.domain() != "ai.onnx")
      fail("unsupported op '{}' in domain '{}' (node '{}')", np.op_type(), np.domain(), name);
    const ops::OpDef* def = ops::find_op(np.op_type());
    if (!def || def->internal) fail("unsupported op '{}' (node '{}', opset {})", np.op_type(), name, opset);
    for (const auto& a : np.attribute()) {
      if (ops::is_compiler_attribute(a.name()))
        fail("{}: attribute '{}' is not ONNX; ingot's passes set it themselves", node->describe(), a.name());
      node->attrs[a.name()] = attr_from_proto(a, *node, dir);
    }
    for (int o = 0; o < np.output_size(); ++o) {
      if (np.output(o).empty()) continue;
      auto [it, fresh] = defined_by.emplace(np.output(o), fmt::format("node '{}' ({})", name, np.op_type()));
      if (!fresh)
        fail("node '{}' ({}) writes '{}', which {} already defines; every value has one producer", name,
             np.op_type(), np.output(o), it->second);
    }
    for (int o = 0; o < np.output_size(); ++o) {
      Value* out = node->outputs[o];
      out->name = np.output(o).empty() ? fmt::format("{}:{}", name, o) : np.output(o);
      if (!np.output(o).empty()) values[np.output(o)] = out;
    }
    def->infer(*node);
    // Evaluate nodes whose inputs are all known now: later shape rules (Reshape's
    // shape, Slice's starts) need those values. fold_constants then removes them.
    bool known = def->reference != nullptr;
    for (Value* in : node->inputs) known &= in == nullptr || in->is_constant() || def->folds_from_shape;
    if (known && ops::fold_at_compile_time(*node)) {
      std::vector<const Tensor*> in_tensors;
      for (Value* in : node->inputs) in_tensors.push_back(in && in->constant ? in->constant.get() : nullptr);
      std::vector<Tensor> results = ops::run_reference(*node, in_tensors);
      for (size_t o = 0; o < results.size(); ++o)
        node->outputs[o]->constant = std::make_shared<const Tensor>(std::move(results[o]));
    }
  }
  for (const auto& out : g.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) fail("graph output '{}' is never defined", out.name());
    graph->outputs.push_back(it->second);
  }
  if (graph->outputs.empty()) fail("'{}' has no outputs", path);
  return graph;
}

}  // namespace

std::unique_ptr<Graph> import_onnx_file(const std::string& path, const ImportOptions& options) {
  const std::filesystem::path model_path(path);
  const std::string bytes = read_file(model_path, "model");
  return import_model(bytes, path, model_path.parent_path(), options);
}

std::unique_ptr<Graph> import_onnx_bytes(std::string_view bytes, const std::string& name,
                                         const ImportOptions& options) {
  return import_model(bytes, name, std::nullopt, options);
}

}  // namespace ingot::import
