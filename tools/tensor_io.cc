#include "tools/tensor_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"

namespace ingot::tools {

static_assert(std::endian::native == std::endian::little,
              "tensor bytes are read and written in host order, assumed little-endian");

namespace {

constexpr std::string_view kSupportedDtypes = "f32, i64, i32, bool, u8, i8";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Quotes user text for an error message, cut short when long; bytes outside printable
// ASCII are written as \xNN, so a file's bytes never reach the terminal as they are.
std::string quoted(std::string_view text) {
  const bool cut = text.size() > 48;
  std::string out = "'";
  for (unsigned char c : cut ? text.substr(0, 45) : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  return out + (cut ? "...'" : "'");
}

template <typename T>
void store(std::vector<uint8_t>& bytes, uint64_t index, T value) {
  std::memcpy(bytes.data() + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
T load(const std::vector<uint8_t>& bytes, uint64_t index) {
  T value;
  std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

// Parses one element of |dtype| from |text| into |bytes| at |index|.
void parse_value(std::string_view text, ingot_dtype_t dtype, std::vector<uint8_t>& bytes,
                 uint64_t index) {
  std::string_view value = trim(text);
  if (value.empty()) fail("empty value");
  std::string_view digits = value;
  if (digits.front() == '+') digits.remove_prefix(1);
  const char* begin = digits.data();
  const char* end = digits.data() + digits.size();

  if (dtype == INGOT_DTYPE_F32) {
    double parsed = 0;
    auto [ptr, ec] = std::from_chars(begin, end, parsed, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) fail("value {} is out of range for f32", quoted(value));
    if (ec != std::errc() || ptr != end) fail("value {} is not a number", quoted(value));
    if (std::isfinite(parsed) && std::fabs(parsed) > std::numeric_limits<float>::max()) {
      fail("value {} is out of range for f32", quoted(value));
    }
    store(bytes, index, static_cast<float>(parsed));
    return;
  }
  if (dtype == INGOT_DTYPE_BOOL) {
    std::string word = lower(value);
    if (word == "1" || word == "true") {
      store<uint8_t>(bytes, index, 1);
    } else if (word == "0" || word == "false") {
      store<uint8_t>(bytes, index, 0);
    } else {
      fail("value {} is not a bool (0, 1, true, false)", quoted(value));
    }
    return;
  }
  int64_t parsed = 0;
  auto [ptr, ec] = std::from_chars(begin, end, parsed);
  if (ec == std::errc::result_out_of_range) {
    fail("value {} is out of range for {}", quoted(value), dtype_name(dtype));
  }
  if (ec != std::errc() || ptr != end) {
    fail("value {} is not an integer ({})", quoted(value), dtype_name(dtype));
  }
  auto check_range = [&](int64_t lo, int64_t hi) {
    if (parsed < lo || parsed > hi) {
      fail("value {} is out of range for {} ({}..{})", quoted(value), dtype_name(dtype), lo, hi);
    }
  };
  switch (dtype) {
    case INGOT_DTYPE_I64:
      store(bytes, index, parsed);
      break;
    case INGOT_DTYPE_I32:
      check_range(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      store(bytes, index, static_cast<int32_t>(parsed));
      break;
    case INGOT_DTYPE_U8:
      check_range(0, 255);
      store(bytes, index, static_cast<uint8_t>(parsed));
      break;
    case INGOT_DTYPE_I8:
      check_range(-128, 127);
      store(bytes, index, static_cast<int8_t>(parsed));
      break;
    default:
      fail("unsupported dtype {}", dtype_name(dtype));
  }
}

// ---- .npy header: a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (1, 64), }
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, std::string_view source)
      : text_(text), source_(source) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  Header parse() {
    Header header;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key = parse_string();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') error("structured dtypes are not supported");
        header.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        header.shape = parse_shape();
        have_shape = true;
      } else {
        error(fmt::format("unexpected key {}", quoted(key)));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        error("expected ',' or '}'");
      }
    }
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the closing '}'");
    if (!have_descr) error("missing key 'descr'");
    if (!have_order) error("missing key 'fortran_order'");
    if (!have_shape) error("missing key 'shape'");
    return header;
  }

 private:
  [[noreturn]] void error(std::string_view what) const {
    fail("{}: malformed .npy header: {} (at header byte {})", source_, what, pos_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) error(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') error("expected a quoted string");
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) error("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }
  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    error("expected True or False");
  }
  std::vector<int64_t> parse_shape() {
    if (peek() != '(') error("expected '(' to start the shape");
    ++pos_;
    std::vector<int64_t> shape;
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++pos_;
        return shape;
      }
      const char* begin = text_.data() + pos_;
      const char* end = text_.data() + text_.size();
      int64_t dim = 0;
      auto [ptr, ec] = std::from_chars(begin, end, dim);
      if (ec == std::errc::result_out_of_range) error("shape dimension too large");
      if (ec != std::errc() || dim < 0) error("expected a non-negative shape dimension");
      pos_ += static_cast<size_t>(ptr - begin);
      if (peek() == 'L') ++pos_;  // Python 2 long suffix
      shape.push_back(dim);
      if (shape.size() > 64) error("too many dimensions");
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        error("expected ',' or ')' in the shape");
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
};

// Maps a NumPy descr to a dtype, or explains why it cannot.
ingot_dtype_t dtype_from_descr(const std::string& descr, std::string_view source) {
  if (descr.size() < 3) fail("{}: unsupported .npy dtype {}", source, quoted(descr));
  const char order = descr[0];
  const std::string code = descr.substr(1);
  struct Entry {
    const char* code;
    ingot_dtype_t dtype;
  };
  static const Entry kTable[] = {
      {"f4", INGOT_DTYPE_F32}, {"i8", INGOT_DTYPE_I64}, {"i4", INGOT_DTYPE_I32},
      {"b1", INGOT_DTYPE_BOOL}, {"u1", INGOT_DTYPE_U8}, {"i1", INGOT_DTYPE_I8},
  };
  for (const Entry& entry : kTable) {
    if (code != entry.code) continue;
    const bool one_byte = dtype_size(entry.dtype) == 1;
    if (order == '<' || (one_byte && (order == '|' || order == '='))) return entry.dtype;
    if (order == '>') {
      fail("{}: big-endian .npy data ({}) is not supported; save it little-endian "
           "(e.g. array.astype('<{}'))", source, quoted(descr), code);
    }
    break;
  }
  static const std::pair<const char*, const char*> kNumpyNames[] = {
      {"f8", "float64"}, {"f2", "float16"}, {"i2", "int16"}, {"u2", "uint16"},
      {"u4", "uint32"},  {"u8", "uint64"},  {"c8", "complex64"}, {"c16", "complex128"},
  };
  for (const auto& [c, name] : kNumpyNames) {
    if (code == c) {
      fail("{}: .npy dtype {} ({}) is not supported (supported: {})", source, name, quoted(descr),
           kSupportedDtypes);
    }
  }
  fail("{}: .npy dtype {} is not supported (supported: {})", source, quoted(descr), kSupportedDtypes);
}

std::string npy_descr(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return "<f4";
    case INGOT_DTYPE_I64: return "<i8";
    case INGOT_DTYPE_I32: return "<i4";
    case INGOT_DTYPE_BOOL: return "|b1";
    case INGOT_DTYPE_U8: return "|u1";
    case INGOT_DTYPE_I8: return "|i1";
  }
  fail("cannot write dtype {} to .npy", dtype_name(dtype));
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

// ---- dtypes and shapes -------------------------------------------------------

size_t dtype_size(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return 4;
    case INGOT_DTYPE_I64: return 8;
    case INGOT_DTYPE_I32: return 4;
    case INGOT_DTYPE_BOOL: return 1;
    case INGOT_DTYPE_U8: return 1;
    case INGOT_DTYPE_I8: return 1;
  }
  return 0;
}

std::string dtype_name(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return "f32";
    case INGOT_DTYPE_I64: return "i64";
    case INGOT_DTYPE_I32: return "i32";
    case INGOT_DTYPE_BOOL: return "bool";
    case INGOT_DTYPE_U8: return "u8";
    case INGOT_DTYPE_I8: return "i8";
  }
  return fmt::format("dtype#{}", static_cast<int>(dtype));
}

std::optional<ingot_dtype_t> parse_dtype(std::string_view name) {
  if (name == "f32") return INGOT_DTYPE_F32;
  if (name == "i64") return INGOT_DTYPE_I64;
  if (name == "i32") return INGOT_DTYPE_I32;
  if (name == "bool" || name == "i1") return INGOT_DTYPE_BOOL;
  if (name == "u8") return INGOT_DTYPE_U8;
  if (name == "i8") return INGOT_DTYPE_I8;
  return std::nullopt;
}

uint64_t element_count(const std::vector<int64_t>& dims) {
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) fail("negative dimension {} in shape {}", dim, format_dims(dims));
    const auto d = static_cast<uint64_t>(dim);
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / d) {
      fail("shape {} has too many elements", format_dims(dims));
    }
    count *= d;
  }
  return count;
}

uint64_t Tensor::element_count() const { return tools::element_count(dims); }

double Tensor::element(uint64_t index) const {
  switch (dtype) {
    case INGOT_DTYPE_F32: return load<float>(bytes, index);
    case INGOT_DTYPE_I64: return static_cast<double>(load<int64_t>(bytes, index));
    case INGOT_DTYPE_I32: return load<int32_t>(bytes, index);
    case INGOT_DTYPE_BOOL: return load<uint8_t>(bytes, index) != 0 ? 1.0 : 0.0;
    case INGOT_DTYPE_U8: return load<uint8_t>(bytes, index);
    case INGOT_DTYPE_I8: return load<int8_t>(bytes, index);
  }
  fail("unsupported dtype {}", dtype_name(dtype));
}

std::string format_dims(const std::vector<int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

std::string format_type(const std::vector<int64_t>& dims, ingot_dtype_t dtype) {
  if (dims.empty()) return dtype_name(dtype);
  return fmt::format("{}x{}", format_dims(dims), dtype_name(dtype));
}

std::vector<int64_t> parse_dims(std::string_view text) {
  if (text.empty()) fail("empty shape (expected dimensions such as 1x3x224x224)");
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    size_t end = text.find('x', start);
    std::string_view part = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty()) {
      fail("shape {}: empty dimension (expected dimensions such as 1x3x224x224)", quoted(text));
    }
    int64_t dim = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), dim);
    if (ec == std::errc::result_out_of_range) fail("shape {}: dimension {} is too large", quoted(text), quoted(part));
    if (ec != std::errc() || ptr != part.data() + part.size() || dim < 0 || part.front() == '-') {
      fail("shape {}: dimension {} is not a non-negative integer", quoted(text), quoted(part));
    }
    dims.push_back(dim);
    if (dims.size() > INGOT_MAX_RANK) {
      fail("shape {}: more than {} dimensions", quoted(text), INGOT_MAX_RANK);
    }
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  element_count(dims);  // rejects overflow
  return dims;
}

TypeSpec parse_type(std::string_view text) {
  TypeSpec spec;
  size_t last = text.rfind('x');
  std::string_view dtype_part = last == std::string_view::npos ? text : text.substr(last + 1);
  std::optional<ingot_dtype_t> dtype = parse_dtype(dtype_part);
  if (!dtype) {
    fail("type {}: expected DIMSxDTYPE such as 1x4xf32 (or f32 for a scalar); "
         "dtype '{}' is not one of {}",
         quoted(text), dtype_part, kSupportedDtypes);
  }
  spec.dtype = *dtype;
  if (last != std::string_view::npos) spec.dims = parse_dims(text.substr(0, last));
  return spec;
}

Tensor parse_inline_tensor(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    fail("tensor {}: expected @FILE.npy or TYPE=VALUES such as 1x4xf32=1,2,3,4",
         quoted(text));
  }
  TypeSpec spec = parse_type(trim(text.substr(0, eq)));
  Tensor tensor;
  tensor.dtype = spec.dtype;
  tensor.dims = spec.dims;
  const uint64_t count = tensor.element_count();
  const size_t elem = dtype_size(tensor.dtype);
  if (count > (uint64_t{1} << 32)) fail("tensor {}: too many elements for an inline tensor", quoted(text));

  std::string_view values = trim(text.substr(eq + 1));
  std::vector<std::string_view> parts;
  if (!values.empty()) {
    size_t start = 0;
    while (true) {
      size_t comma = values.find(',', start);
      parts.push_back(values.substr(start, comma == std::string_view::npos ? comma : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  const std::string type = format_type(tensor.dims, tensor.dtype);
  const bool splat = parts.size() == 1 && count > 1;
  if (!splat && parts.size() != count) {
    fail("tensor {}: {} needs {} value{}, got {}", quoted(text), type, count,
         count == 1 ? "" : "s", parts.size());
  }
  // Allocated once the values are known to fit, so a wrong count costs no memory.
  tensor.bytes.assign(count * elem, 0);
  try {
    for (uint64_t i = 0; i < parts.size(); ++i) parse_value(parts[i], tensor.dtype, tensor.bytes, i);
  } catch (const Error& e) {
    fail("tensor {}: {}", quoted(text), e.what());
  }
  if (splat) {
    for (uint64_t i = 1; i < count; ++i) {
      std::memcpy(tensor.bytes.data() + i * elem, tensor.bytes.data(), elem);
    }
  }
  return tensor;
}

Tensor parse_tensor_arg(std::string_view arg) {
  if (!arg.empty() && arg.front() == '@') {
    if (arg.size() == 1) fail("'@' must be followed by a .npy or .pb file path");
    return read_tensor_file(std::string(arg.substr(1)));
  }
  return parse_inline_tensor(arg);
}

// ---- .npy ---------------------------------------------------------------------

Tensor decode_npy(const uint8_t* data, size_t size, std::string_view source) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    fail("{}: not a .npy file (missing the \\x93NUMPY magic)", source);
  }
  const uint8_t major = data[6];
  size_t header_len = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail("{}: truncated .npy header", source);
    header_len = static_cast<size_t>(data[8]) | (static_cast<size_t>(data[9]) << 8) |
                 (static_cast<size_t>(data[10]) << 16) | (static_cast<size_t>(data[11]) << 24);
    header_start = 12;
  } else {
    fail("{}: unsupported .npy format version {}.{}", source, major, data[7]);
  }
  if (header_len > size - header_start) {
    fail("{}: truncated .npy header ({} header bytes announced, {} present)", source,
         header_len, size - header_start);
  }
  std::string_view header_text(reinterpret_cast<const char*>(data + header_start), header_len);
  NpyHeaderParser::Header header = NpyHeaderParser(header_text, source).parse();

  Tensor tensor;
  tensor.dtype = dtype_from_descr(header.descr, source);
  tensor.dims = header.shape;
  if (tensor.dims.size() > INGOT_MAX_RANK) {
    fail("{}: rank {} is above the supported maximum {}", source, tensor.dims.size(),
         INGOT_MAX_RANK);
  }
  if (header.fortran_order) {
    fail("{}: Fortran-order .npy arrays are not supported; save a C-order array "
         "(numpy.ascontiguousarray)", source);
  }
  uint64_t count = 0;
  try {
    count = tensor.element_count();
  } catch (const Error& e) {
    fail("{}: {}", source, e.what());
  }
  const size_t elem = dtype_size(tensor.dtype);
  if (count > std::numeric_limits<uint64_t>::max() / elem) {
    fail("{}: shape {} is too large", source, format_type(tensor.dims, tensor.dtype));
  }
  const uint64_t needed = count * elem;
  const size_t available = size - header_start - header_len;
  if (needed > available) {
    fail("{}: truncated .npy data: shape {} needs {} bytes, file has {}", source,
         format_type(tensor.dims, tensor.dtype), needed, available);
  }
  if (available != needed) {
    fail("{}: {} unexpected bytes after the .npy data (shape {} needs {} bytes)", source,
         available - needed, format_type(tensor.dims, tensor.dtype), needed);
  }
  const uint8_t* payload = data + header_start + header_len;
  tensor.bytes.assign(payload, payload + needed);
  return tensor;
}

Tensor read_npy(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  return decode_npy(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> encode_npy(const Tensor& tensor) {
  const uint64_t count = tensor.element_count();
  if (tensor.bytes.size() != count * dtype_size(tensor.dtype)) {
    fail("tensor {} holds {} bytes, expected {}", format_type(tensor.dims, tensor.dtype),
         tensor.bytes.size(), count * dtype_size(tensor.dtype));
  }
  std::string shape;
  if (tensor.dims.size() == 1) {
    shape = fmt::format("({},)", tensor.dims[0]);
  } else {
    shape = fmt::format("({})", fmt::join(tensor.dims, ", "));
  }
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   npy_descr(tensor.dtype), shape);
  // Pad with spaces and end with '\n' so the data starts at a multiple of 64.
  auto padded = [&](size_t preamble) {
    size_t total = preamble + header.size() + 1;
    return header.size() + (64 - total % 64) % 64 + 1;
  };
  uint8_t major = 1;
  size_t preamble = 10;
  size_t header_len = padded(preamble);
  if (header_len > 0xffff) {
    major = 2;
    preamble = 12;
    header_len = padded(preamble);
  }
  std::vector<uint8_t> out;
  out.reserve(preamble + header_len + tensor.bytes.size());
  const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  out.insert(out.end(), magic, magic + sizeof(magic));
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), header_len - header.size() - 1, ' ');
  out.push_back('\n');
  out.insert(out.end(), tensor.bytes.begin(), tensor.bytes.end());
  return out;
}

// ---- files by extension ----------------------------------------------------------

bool is_tensor_proto_path(std::string_view path) {
  return path.size() > 3 && path.substr(path.size() - 3) == ".pb";
}

Tensor read_tensor_file(const std::string& path) {
  return is_tensor_proto_path(path) ? read_tensor_proto(path) : read_npy(path);
}

std::vector<uint8_t> encode_tensor_file(const Tensor& tensor, const std::string& path,
                                        std::string_view name) {
  return is_tensor_proto_path(path) ? encode_tensor_proto(tensor, name) : encode_npy(tensor);
}

// ---- ONNX TensorProto ---------------------------------------------------------------

namespace {

std::optional<ingot_dtype_t> dtype_from_proto(int32_t type) {
  switch (type) {
    case onnx::TensorProto::FLOAT: return INGOT_DTYPE_F32;
    case onnx::TensorProto::INT64: return INGOT_DTYPE_I64;
    case onnx::TensorProto::INT32: return INGOT_DTYPE_I32;
    case onnx::TensorProto::BOOL: return INGOT_DTYPE_BOOL;
    case onnx::TensorProto::UINT8: return INGOT_DTYPE_U8;
    case onnx::TensorProto::INT8: return INGOT_DTYPE_I8;
    default: return std::nullopt;
  }
}

int32_t dtype_to_proto(ingot_dtype_t dtype) {
  switch (dtype) {
    case INGOT_DTYPE_F32: return onnx::TensorProto::FLOAT;
    case INGOT_DTYPE_I64: return onnx::TensorProto::INT64;
    case INGOT_DTYPE_I32: return onnx::TensorProto::INT32;
    case INGOT_DTYPE_BOOL: return onnx::TensorProto::BOOL;
    case INGOT_DTYPE_U8: return onnx::TensorProto::UINT8;
    case INGOT_DTYPE_I8: return onnx::TensorProto::INT8;
  }
  fail("cannot write dtype {} to a TensorProto", dtype_name(dtype));
}

}  // namespace

Tensor decode_tensor_proto(const uint8_t* data, size_t size, std::string_view source) {
  onnx::TensorProto proto;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(data, static_cast<int>(size))) {
    fail("{}: not a valid ONNX TensorProto (protobuf parse failed)", source);
  }
  std::optional<ingot_dtype_t> dtype = dtype_from_proto(proto.data_type());
  if (!dtype) {
    const std::string type_name = onnx::TensorProto::DataType_IsValid(proto.data_type())
                                      ? onnx::TensorProto::DataType_Name(proto.data_type())
                                      : fmt::format("#{}", proto.data_type());
    fail("{}: TensorProto element type {} is not supported (supported: FLOAT, INT64, INT32, "
         "BOOL, UINT8, INT8)", source, type_name);
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    fail("{}: TensorProto with external data is not supported", source);
  }
  if (proto.has_segment()) fail("{}: segmented TensorProto is not supported", source);
  Tensor tensor;
  tensor.dtype = *dtype;
  if (static_cast<unsigned>(proto.dims_size()) > INGOT_MAX_RANK) {
    fail("{}: rank {} is above the supported maximum {}", source, proto.dims_size(),
         INGOT_MAX_RANK);
  }
  for (int64_t d : proto.dims()) {
    if (d < 0) fail("{}: negative dimension {} in the TensorProto", source, d);
    tensor.dims.push_back(d);
  }
  uint64_t count = 0;
  try {
    count = tensor.element_count();
  } catch (const Error& e) {
    fail("{}: {}", source, e.what());
  }
  const size_t elem = dtype_size(tensor.dtype);
  if (count > std::numeric_limits<uint64_t>::max() / elem) {
    fail("{}: shape {} is too large", source, format_type(tensor.dims, tensor.dtype));
  }
  const std::string type = format_type(tensor.dims, tensor.dtype);
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != count * elem) {
      fail("{}: raw_data holds {} bytes; {} needs {}", source, raw.size(), type, count * elem);
    }
    tensor.bytes.assign(raw.begin(), raw.end());
    return tensor;
  }
  auto check_count = [&](int got, const char* field) {
    if (static_cast<uint64_t>(got) != count) {
      fail("{}: {} holds {} values; {} needs {}", source, field, got, type, count);
    }
  };
  // The value count is checked before anything is allocated: a small file that names
  // a huge shape costs no memory.
  switch (tensor.dtype) {
    case INGOT_DTYPE_F32: check_count(proto.float_data_size(), "float_data"); break;
    case INGOT_DTYPE_I64: check_count(proto.int64_data_size(), "int64_data"); break;
    default: check_count(proto.int32_data_size(), "int32_data"); break;
  }
  tensor.bytes.assign(count * elem, 0);
  switch (tensor.dtype) {
    case INGOT_DTYPE_F32:
      check_count(proto.float_data_size(), "float_data");
      for (uint64_t i = 0; i < count; ++i) store(tensor.bytes, i, proto.float_data(static_cast<int>(i)));
      break;
    case INGOT_DTYPE_I64:
      check_count(proto.int64_data_size(), "int64_data");
      for (uint64_t i = 0; i < count; ++i) store(tensor.bytes, i, proto.int64_data(static_cast<int>(i)));
      break;
    case INGOT_DTYPE_I32:
    case INGOT_DTYPE_BOOL:
    case INGOT_DTYPE_U8:
    case INGOT_DTYPE_I8:
      check_count(proto.int32_data_size(), "int32_data");
      for (uint64_t i = 0; i < count; ++i) {
        const int32_t v = proto.int32_data(static_cast<int>(i));
        switch (tensor.dtype) {
          case INGOT_DTYPE_I32: store(tensor.bytes, i, v); break;
          case INGOT_DTYPE_BOOL: store<uint8_t>(tensor.bytes, i, v != 0); break;
          case INGOT_DTYPE_U8: store(tensor.bytes, i, static_cast<uint8_t>(v)); break;
          default: store(tensor.bytes, i, static_cast<int8_t>(v)); break;
        }
      }
      break;
  }
  return tensor;
}

Tensor read_tensor_proto(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  return decode_tensor_proto(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> encode_tensor_proto(const Tensor& tensor, std::string_view name) {
  const uint64_t count = tensor.element_count();
  if (tensor.bytes.size() != count * dtype_size(tensor.dtype)) {
    fail("tensor {} holds {} bytes, expected {}", format_type(tensor.dims, tensor.dtype),
         tensor.bytes.size(), count * dtype_size(tensor.dtype));
  }
  onnx::TensorProto proto;
  proto.set_data_type(dtype_to_proto(tensor.dtype));
  for (int64_t d : tensor.dims) proto.add_dims(d);
  if (!name.empty()) proto.set_name(std::string(name));
  proto.set_raw_data(tensor.bytes.data(), tensor.bytes.size());
  std::string out;
  if (!proto.SerializeToString(&out)) fail("cannot encode tensor {}", format_type(tensor.dims, tensor.dtype));
  return std::vector<uint8_t>(out.begin(), out.end());
}

// ---- files ----------------------------------------------------------------------

std::vector<uint8_t> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open '{}': {}", path, errno_text());
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("cannot stat '{}': {}", path, errno_text());
  if (!S_ISREG(st.st_mode)) fail("'{}' is not a regular file", path);
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot read '{}': {}", path, errno_text());
    if (n == 0) fail("cannot read '{}': file shrank while reading", path);
    done += static_cast<size_t>(n);
  }
  return bytes;
}

PendingFile::PendingFile(std::string path, const std::vector<uint8_t>& bytes)
    : path_(std::move(path)) {
  if (path_.empty()) fail("empty output path");
  const size_t slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path_.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  if (base.empty()) fail("cannot write '{}': the path names a folder", path_);
  std::string temp = dir + "." + base + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) fail("cannot write '{}': {}", path_, errno_text());
  temp_path_ = temp;
  // mkstemp creates the file 0600; give it the mode a plain create would.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = errno_text();
      ::close(fd);
      fail("cannot write '{}': {}", path_, why);  // the destructor removes the temp
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail("cannot write '{}': {}", path_, errno_text());
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : path_(std::move(other.path_)), temp_path_(std::exchange(other.temp_path_, {})) {}

PendingFile::~PendingFile() {
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void PendingFile::commit() {
  if (temp_path_.empty()) fail("'{}' was already written", path_);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    fail("cannot write '{}': {}", path_, errno_text());
  }
  temp_path_.clear();
}

void write_npy(const Tensor& tensor, const std::string& path) {
  PendingFile file(path, encode_npy(tensor));
  file.commit();
}

// ---- printing -------------------------------------------------------------------

std::string format_element(const Tensor& tensor, uint64_t index) {
  switch (tensor.dtype) {
    case INGOT_DTYPE_F32: return fmt::format("{:.6g}", load<float>(tensor.bytes, index));
    case INGOT_DTYPE_I64: return fmt::format("{}", load<int64_t>(tensor.bytes, index));
    case INGOT_DTYPE_I32: return fmt::format("{}", load<int32_t>(tensor.bytes, index));
    case INGOT_DTYPE_BOOL: return load<uint8_t>(tensor.bytes, index) != 0 ? "1" : "0";
    case INGOT_DTYPE_U8: return fmt::format("{}", load<uint8_t>(tensor.bytes, index));
    case INGOT_DTYPE_I8: return fmt::format("{}", load<int8_t>(tensor.bytes, index));
  }
  return "?";
}

std::string format_values(const Tensor& tensor, size_t max_elements, std::string_view indent) {
  const uint64_t count = tensor.element_count();
  std::string out(indent);
  out += '[';
  auto append_range = [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i) {
      if (i != begin) out += ", ";
      out += format_element(tensor, i);
    }
  };
  if (count <= max_elements) {
    append_range(0, count);
    out += "]\n";
    return out;
  }
  const uint64_t edge = max_elements >= 6 ? max_elements / 2 - 2 : 1;
  append_range(0, edge);
  out += ", ..., ";
  append_range(count - edge, count);
  out += fmt::format("]  ({} values)\n", count);

  double min = std::numeric_limits<double>::infinity();
  double max = -min;
  double sum = 0;
  uint64_t nans = 0;
  for (uint64_t i = 0; i < count; ++i) {
    double v = tensor.element(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
  }
  out += indent;
  if (nans == count) {
    out += fmt::format("all {} values are nan\n", count);
  } else {
    out += fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}", min, max,
                       sum / static_cast<double>(count - nans));
    if (nans != 0) out += fmt::format("  ({} nan)", nans);
    out += '\n';
  }
  return out;
}

}  // namespace ingot::tools
