// Overflow-checked shape arithmetic and the size limits every computed tensor obeys.
//
// A model can put any int64 into an attribute or a constant shape input. Shape rules
// form sums and products of dimensions with these helpers, so a hostile value fails
// with one clear line naming the node instead of wrapping into a small, wrong size
// that a reference implementation or a kernel would then index past.
#pragma once

#include <cstdint>
#include <string_view>

#include "compiler/ir/graph.h"

namespace ingot {

// The largest tensor a shape rule may compute, in bytes, and the highest rank. Every
// op output is checked against both (ops::set_output); bigger models are refused at
// compile time. 4 GiB also keeps every element offset and byte size well inside int64.
inline constexpr int64_t kMaxTensorBytes = int64_t{4} << 30;
inline constexpr size_t kMaxTensorRank = 8;
// The most bytes a node evaluated at compile time (constant folding) may produce beyond
// what it reads: a node whose outputs exceed both this and its inputs' bytes (Tile,
// Expand, ConstantOfShape of a few bytes of model) is computed at run time instead, so
// a tiny model cannot make the compiler build gigabytes of constants.
inline constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;

// a + b and a * b; fail naming the node and `what` when the result overflows int64.
int64_t checked_add(int64_t a, int64_t b, const Node& node, std::string_view what);
int64_t checked_mul(int64_t a, int64_t b, const Node& node, std::string_view what);
// Product of the dims; fails on a negative dim or an overflow.
int64_t checked_num_elements(const Shape& shape, const Node& node, std::string_view what);
// Fails unless `shape` has no negative dim, rank <= kMaxTensorRank, no dim and no
// total byte size above kMaxTensorBytes. Checking single dims too bounds the per-dim
// tables shape rules build even when another dim is 0.
void check_tensor_limits(const Shape& shape, DType dtype, const Node& node, std::string_view what);

}  // namespace ingot
