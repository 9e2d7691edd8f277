// The tensor readers of the command line (tools/tensor_io): the first byte picks the
// .npy reader, the TensorProto (.pb) reader or the inline "--input=TYPE=VALUES" parser;
// the rest is the file or the text. A tensor that is read must be consistent and must
// come back unchanged through the writer and the reader again. ingot::Error is how bad
// input is refused; anything else (a crash, a sanitizer report, another exception) is
// a finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/ir/error.h"
#include "tests/fuzz/fuzz_check.h"
#include "tools/tensor_io.h"

namespace ingot::fuzz {
namespace {

using namespace ingot::tools;

// Inline tensors name their size: one value fills a tensor of any size the type says,
// which is the command line's business, not the parser's; such big ones are skipped.
constexpr uint64_t kMaxInlineBytes = uint64_t{16} << 20;

void check_tensor(const Tensor& t) {
  FUZZ_CHECK(dtype_size(t.dtype) != 0);
  FUZZ_CHECK(t.dims.size() <= INGOT_MAX_RANK);
  FUZZ_CHECK(t.bytes.size() == t.element_count() * dtype_size(t.dtype));
  (void)format_type(t.dims, t.dtype);
  (void)format_values(t, 8);
  // Round trips through both writers.
  const std::vector<uint8_t> npy = encode_npy(t);
  const Tensor from_npy = decode_npy(npy.data(), npy.size(), "round trip");
  FUZZ_CHECK(from_npy.dtype == t.dtype && from_npy.dims == t.dims && from_npy.bytes == t.bytes);
  const std::vector<uint8_t> pb = encode_tensor_proto(t, "x");
  const Tensor from_pb = decode_tensor_proto(pb.data(), pb.size(), "round trip");
  FUZZ_CHECK(from_pb.dtype == t.dtype && from_pb.dims == t.dims && from_pb.bytes == t.bytes);
}

bool inline_too_large(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) return false;
  try {
    std::string_view type_text = text.substr(0, eq);
    while (!type_text.empty() && (type_text.front() == ' ' || type_text.front() == '\t')) type_text.remove_prefix(1);
    while (!type_text.empty() && (type_text.back() == ' ' || type_text.back() == '\t')) type_text.remove_suffix(1);
    const TypeSpec type = parse_type(type_text);
    const uint64_t count = element_count(type.dims);
    // With a list of values the parser must refuse a wrong count before allocating;
    // only a single value (filling every element) builds a tensor this large.
    return count > kMaxInlineBytes / 8 && text.find(',', eq) == std::string_view::npos;
  } catch (const ingot::Error&) {
    return false;  // the parser refuses it itself
  }
}

}  // namespace
}  // namespace ingot::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ingot::fuzz;
  if (size == 0) return 0;
  const uint8_t which = data[0] % 3;
  // An exact-size copy, so ASan sees any read past the end.
  AlignedBytes bytes = aligned_copy(data + 1, size - 1);
  const size_t n = size - 1;
  try {
    switch (which) {
      case 0:
        check_tensor(ingot::tools::decode_npy(bytes.get(), n, "fuzz.npy"));
        break;
      case 1:
        check_tensor(ingot::tools::decode_tensor_proto(bytes.get(), n, "fuzz.pb"));
        break;
      default: {
        const std::string_view text(reinterpret_cast<const char*>(bytes.get()), n);
        if (inline_too_large(text)) return 0;
        check_tensor(ingot::tools::parse_inline_tensor(text));
        break;
      }
    }
  } catch (const ingot::Error&) {
    // Refused with a message: what bad input should get.
  }
  return 0;
}
