// Comparing a computed tensor with an expected one, element by element.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/tensor_io.h"

namespace ingot::tools {

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

// An element matches when |got - expected| <= atol + rtol * |expected|. Equal values
// always match (so inf matches inf of the same sign); NaN matches only NaN.
bool element_matches(double got, double expected, const Tolerance& tolerance);

struct Mismatch {
  uint64_t index = 0;              // flat, C order
  std::vector<int64_t> position;   // multi-index
  double got = 0;
  double expected = 0;
  std::string got_text;            // as printed (exact for integers)
  std::string expected_text;
};

struct Comparison {
  uint64_t element_count = 0;
  uint64_t mismatch_count = 0;
  // The mismatch that exceeds its tolerance by the most (a NaN or infinity where a
  // finite value was expected counts as infinitely far; ties go to the lowest index).
  std::optional<Mismatch> worst;
  bool ok() const { return mismatch_count == 0; }
};

// Compares |got| with |expected| with element_matches. Throws ingot::Error when
// dtypes or shapes differ. Integer differences are computed exactly (also i64 beyond
// 2^53); bool compares truth values.
Comparison compare_tensors(const Tensor& got, const Tensor& expected,
                           const Tolerance& tolerance);

// The multi-index of flat (C order) element |index| in |dims|; [] for a scalar.
std::vector<int64_t> unravel_index(uint64_t index, const std::vector<int64_t>& dims);

// "3 of 10 elements differ (atol 0.0001, rtol 0.0001); worst at index 7 [0, 7]:
// got 1.5, expected 1.2"
std::string describe_mismatches(const Comparison& comparison, const Tolerance& tolerance);

}  // namespace ingot::tools
