#include "compiler/ir/checked.h"

#include "compiler/ir/error.h"

namespace ingot {

int64_t checked_add(int64_t a, int64_t b, const Node& node, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("{}: {}: {} + {} overflows int64", node.describe(), what, a, b);
  return r;
}

int64_t checked_mul(int64_t a, int64_t b, const Node& node, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("{}: {}: {} * {} overflows int64", node.describe(), what, a, b);
  return r;
}

int64_t checked_num_elements(const Shape& shape, const Node& node, std::string_view what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("{}: {} has a negative dimension in shape {}", node.describe(), what, shape_str(shape));
    n = checked_mul(n, d, node, what);
  }
  return n;
}

void check_tensor_limits(const Shape& shape, DType dtype, const Node& node, std::string_view what) {
  if (shape.size() > kMaxTensorRank)
    fail("{}: {} has rank {}, above the limit of {}", node.describe(), what, shape.size(), kMaxTensorRank);
  for (int64_t d : shape) {
    if (d < 0) fail("{}: {} has a negative dimension in shape {}", node.describe(), what, shape_str(shape));
    if (d > kMaxTensorBytes)
      fail("{}: {} has dimension {}, above the limit of {} bytes per tensor", node.describe(), what, d,
           kMaxTensorBytes);
  }
  for (int64_t d : shape)
    if (d == 0) return;  // no elements, whatever the other dims say
  int64_t elements = 1;
  bool overflow = false;
  for (int64_t d : shape) overflow |= __builtin_mul_overflow(elements, d, &elements);
  if (overflow) fail("{}: {} shape {} has more elements than int64 can count", node.describe(), what, shape_str(shape));
  int64_t bytes;
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(dtype_size(dtype)), &bytes) || bytes > kMaxTensorBytes)
    fail("{}: {} shape {} ({}) has {} elements, above the limit of {} bytes per tensor", node.describe(), what,
         shape_str(shape), dtype_name(dtype), elements, kMaxTensorBytes);
}

}  // namespace ingot
