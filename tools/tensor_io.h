// Host tensors for the command line: .npy files, ONNX TensorProto files (.pb), inline
// tensors ("1x4xf32=1,2,3,4") and type strings ("1x64xf32").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingot/abi.h"

namespace ingot::tools {

// A dense tensor in C order; element bytes are little-endian (the host's order).
struct Tensor {
  ingot_dtype_t dtype = INGOT_DTYPE_F32;
  std::vector<int64_t> dims;   // empty: a scalar
  std::vector<uint8_t> bytes;  // element_count() * dtype_size(dtype)

  uint64_t element_count() const;
  // Element |index| converted to double (exact for every supported dtype except
  // i64 beyond 2^53).
  double element(uint64_t index) const;
};

// Bytes per element of |dtype|; 0 for an unknown value.
size_t dtype_size(ingot_dtype_t dtype);
// "f32", "i64", "i32", "bool", "u8", "i8"; "dtype#N" for an unknown value.
std::string dtype_name(ingot_dtype_t dtype);
// Accepts the names above plus "i1" for bool.
std::optional<ingot_dtype_t> parse_dtype(std::string_view name);

// Product of |dims|; throws ingot::Error on a negative dim or when it overflows.
uint64_t element_count(const std::vector<int64_t>& dims);

// "1x64xf32"; a scalar is just "f32".
std::string format_type(const std::vector<int64_t>& dims, ingot_dtype_t dtype);
// "1x64" (no dtype); a scalar is "" .
std::string format_dims(const std::vector<int64_t>& dims);

// Parses "1x3x224x224" into dims. Throws ingot::Error naming |text| when a part is
// empty, not a non-negative integer, or too large.
std::vector<int64_t> parse_dims(std::string_view text);

// Parses a type string "1x4xf32" (or "f32" for a scalar) into dims and dtype.
struct TypeSpec {
  std::vector<int64_t> dims;
  ingot_dtype_t dtype = INGOT_DTYPE_F32;
};
TypeSpec parse_type(std::string_view text);

// Parses an inline tensor: TYPE=VALUES, e.g. "2x2xf32=1,2,3,4" or "f32=3". VALUES
// are comma separated (spaces allowed); one value fills every element; f32 takes
// nan/inf/-inf; bool takes 0/1/true/false. Throws ingot::Error on any mistake.
Tensor parse_inline_tensor(std::string_view text);

// An --input / --expected-output value: "@path.npy" or "@path.pb" reads a file (see
// read_tensor_file), anything else is an inline tensor.
Tensor parse_tensor_arg(std::string_view arg);

// ---- files by extension ------------------------------------------------------
// True when |path| ends in ".pb" (an ONNX TensorProto); everything else is .npy.
bool is_tensor_proto_path(std::string_view path);
// Reads |path| as a TensorProto when it ends in ".pb", else as .npy.
Tensor read_tensor_file(const std::string& path);
// Encodes |tensor| for |path|: a TensorProto named |name| for ".pb", else .npy.
std::vector<uint8_t> encode_tensor_file(const Tensor& tensor, const std::string& path,
                                        std::string_view name = "");

// ---- ONNX TensorProto (.pb) --------------------------------------------------
// Decodes a serialized onnx.TensorProto (as the ONNX backend tests write them):
// FLOAT, INT64, INT32, BOOL, UINT8 and INT8, from raw_data or the typed fields.
// Other element types, external or segmented data, negative dims, a rank above
// INGOT_MAX_RANK and a value count that does not match the dims are refused with an
// ingot::Error naming |source|.
Tensor decode_tensor_proto(const uint8_t* data, size_t size, std::string_view source);
Tensor read_tensor_proto(const std::string& path);
// Encodes |tensor| as a TensorProto with raw_data, named |name| (may be empty).
std::vector<uint8_t> encode_tensor_proto(const Tensor& tensor, std::string_view name = "");

// ---- .npy ------------------------------------------------------------------
// Reads NumPy .npy format versions 1, 2 and 3: little-endian (or byte-sized) f32,
// i64, i32, bool, u8 and i8 in C order. Fortran order, big-endian data and other
// dtypes are refused with an ingot::Error naming |source| and what is wrong, as are
// malformed headers, truncated data and trailing bytes.
Tensor decode_npy(const uint8_t* data, size_t size, std::string_view source);
Tensor read_npy(const std::string& path);

// Encodes |tensor| as .npy (version 1, or 2 when the header needs it).
std::vector<uint8_t> encode_npy(const Tensor& tensor);

// A file written to a temporary name beside |path| and renamed over |path| only on
// commit(); destroying an uncommitted PendingFile removes the temporary, so a failure
// never leaves a partial or stale-but-new file behind.
class PendingFile {
 public:
  // Writes |bytes| to a temporary file in |path|'s folder. Throws ingot::Error naming
  // |path| when it cannot.
  PendingFile(std::string path, const std::vector<uint8_t>& bytes);
  ~PendingFile();
  PendingFile(PendingFile&& other) noexcept;
  PendingFile& operator=(PendingFile&&) = delete;
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  // Renames the temporary file to the final path. Throws ingot::Error on failure.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;  // empty once committed or moved from
};

// encode_npy + PendingFile + commit.
void write_npy(const Tensor& tensor, const std::string& path);

// Reads a whole file; throws ingot::Error naming |path| on failure.
std::vector<uint8_t> read_file(const std::string& path);

// ---- printing --------------------------------------------------------------
// Element |index| as text: "%.6g" style for f32 ("nan", "inf"), integers exactly,
// bool as 0/1.
std::string format_element(const Tensor& tensor, uint64_t index);
// Values for a human: all of them when there are at most |max_elements|, else the
// first and last few, followed by a line with min/max/mean (NaNs counted apart).
// Every line starts with |indent|.
std::string format_values(const Tensor& tensor, size_t max_elements = 16,
                          std::string_view indent = "  ");

}  // namespace ingot::tools
