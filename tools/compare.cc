#include "tools/compare.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/ir/error.h"

namespace ingot::tools {
namespace {

// How far beyond its tolerance a mismatching element lies.
double excess(double got, double expected, const Tolerance& tolerance) {
  if (std::isnan(got) || std::isnan(expected) || std::isinf(got) || std::isinf(expected)) {
    return std::numeric_limits<double>::infinity();
  }
  return std::fabs(got - expected) - (tolerance.atol + tolerance.rtol * std::fabs(expected));
}

bool is_integer(ingot_dtype_t dtype) { return dtype != INGOT_DTYPE_F32; }

// |got - expected| computed exactly for i64 (doubles lose precision beyond 2^53).
double abs_difference(const Tensor& got, const Tensor& expected, uint64_t index) {
  if (got.dtype == INGOT_DTYPE_I64) {
    int64_t g, e;
    std::memcpy(&g, got.bytes.data() + index * 8, 8);
    std::memcpy(&e, expected.bytes.data() + index * 8, 8);
    __int128 d = static_cast<__int128>(g) - e;
    return static_cast<double>(d < 0 ? -d : d);
  }
  return std::fabs(got.element(index) - expected.element(index));
}

}  // namespace

bool element_matches(double got, double expected, const Tolerance& tolerance) {
  if (std::isnan(got) || std::isnan(expected)) return std::isnan(got) && std::isnan(expected);
  if (got == expected) return true;
  if (std::isinf(got) || std::isinf(expected)) return false;  // inf - x is never "close"
  return std::fabs(got - expected) <= tolerance.atol + tolerance.rtol * std::fabs(expected);
}

std::vector<int64_t> unravel_index(uint64_t index, const std::vector<int64_t>& dims) {
  std::vector<int64_t> position(dims.size(), 0);
  for (size_t i = dims.size(); i-- > 0;) {
    const auto dim = static_cast<uint64_t>(dims[i]);
    if (dim == 0) return position;
    position[i] = static_cast<int64_t>(index % dim);
    index /= dim;
  }
  return position;
}

Comparison compare_tensors(const Tensor& got, const Tensor& expected,
                           const Tolerance& tolerance) {
  if (got.dtype != expected.dtype || got.dims != expected.dims) {
    fail("expected {}, got {}", format_type(expected.dims, expected.dtype),
         format_type(got.dims, got.dtype));
  }
  Comparison result;
  result.element_count = got.element_count();
  const size_t elem = dtype_size(got.dtype);
  if (got.bytes.size() != result.element_count * elem ||
      expected.bytes.size() != result.element_count * elem) {
    fail("tensor data size does not match its shape {}", format_type(got.dims, got.dtype));
  }
  double worst_excess = -std::numeric_limits<double>::infinity();
  uint64_t worst_index = 0;
  for (uint64_t i = 0; i < result.element_count; ++i) {
    // Identical bytes always match; this also keeps i64 beyond 2^53 exact.
    if (std::memcmp(got.bytes.data() + i * elem, expected.bytes.data() + i * elem, elem) == 0) {
      continue;
    }
    const double g = got.element(i);
    const double e = expected.element(i);
    if (got.dtype == INGOT_DTYPE_BOOL && g == e) continue;  // any non-zero byte is true
    double x;
    if (is_integer(got.dtype)) {
      x = abs_difference(got, expected, i) - (tolerance.atol + tolerance.rtol * std::fabs(e));
      if (x <= 0) continue;
    } else {
      if (element_matches(g, e, tolerance)) continue;
      x = excess(g, e, tolerance);
    }
    ++result.mismatch_count;
    if (result.mismatch_count == 1 || x > worst_excess) {
      worst_excess = x;
      worst_index = i;
    }
  }
  if (result.mismatch_count != 0) {
    Mismatch worst;
    worst.index = worst_index;
    worst.position = unravel_index(worst_index, got.dims);
    worst.got = got.element(worst_index);
    worst.expected = expected.element(worst_index);
    worst.got_text = format_element(got, worst_index);
    worst.expected_text = format_element(expected, worst_index);
    result.worst = std::move(worst);
  }
  return result;
}

std::string describe_mismatches(const Comparison& comparison, const Tolerance& tolerance) {
  const std::string bounds = tolerance.atol == 0 && tolerance.rtol == 0
                                 ? std::string("exact")
                                 : fmt::format("atol {:g}, rtol {:g}", tolerance.atol, tolerance.rtol);
  if (comparison.ok()) {
    return fmt::format("all {} elements match ({})", comparison.element_count, bounds);
  }
  const Mismatch& worst = *comparison.worst;
  return fmt::format("{} of {} elements differ ({}); worst at index {} [{}]: got {}, expected {}",
                     comparison.mismatch_count, comparison.element_count, bounds, worst.index,
                     fmt::join(worst.position, ", "), worst.got_text, worst.expected_text);
}

}  // namespace ingot::tools
