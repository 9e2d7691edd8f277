#include "tools/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/ir/error.h"

namespace ingot::tools {
namespace {

template <typename T>
Tensor make_tensor(ingot_dtype_t dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

Tensor f32(std::vector<int64_t> dims, const std::vector<float>& values) {
  return make_tensor(INGOT_DTYPE_F32, std::move(dims), values);
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ToolsCompare, ElementMatchesFormula) {
  const Tolerance tol{1e-4, 1e-4};
  EXPECT_TRUE(element_matches(1.0, 1.0, tol));
  EXPECT_TRUE(element_matches(1.0 + 1.9e-4, 1.0, tol));   // within atol + rtol*1 = 2e-4
  EXPECT_FALSE(element_matches(1.0 + 2.1e-4, 1.0, tol));
  EXPECT_TRUE(element_matches(1000.05, 1000.0, tol));     // rtol scales with |expected|
  EXPECT_FALSE(element_matches(1000.2, 1000.0, tol));
  EXPECT_TRUE(element_matches(-1000.05, -1000.0, tol));
  EXPECT_FALSE(element_matches(1.0, 1000.0, {0, 0}));
  EXPECT_TRUE(element_matches(2.0, 2.0, {0, 0}));
  // The tolerance is relative to expected, not got.
  EXPECT_TRUE(element_matches(0.0, 1.0, {0, 1.0}));
  EXPECT_FALSE(element_matches(1.0, 0.0, {0, 1.0}));
}

TEST(ToolsCompare, NanAndInfinity) {
  const Tolerance tol;
  EXPECT_TRUE(element_matches(kNan, kNan, tol));
  EXPECT_FALSE(element_matches(kNan, 1.0, tol));
  EXPECT_FALSE(element_matches(1.0, kNan, tol));
  EXPECT_TRUE(element_matches(kInf, kInf, tol));
  EXPECT_FALSE(element_matches(kInf, -kInf, tol));
  EXPECT_FALSE(element_matches(1e30, kInf, {1e30, 1e30}));
}

TEST(ToolsCompare, AllMatch) {
  Comparison c = compare_tensors(f32({2, 2}, {1, 2, kNan, -0.0f}), f32({2, 2}, {1, 2.00001f, kNan, 0}),
                                 Tolerance{});
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.element_count, 4u);
  EXPECT_EQ(c.mismatch_count, 0u);
  EXPECT_FALSE(c.worst.has_value());
  EXPECT_EQ(describe_mismatches(c, Tolerance{}), "all 4 elements match (atol 0.0001, rtol 0.0001)");
  EXPECT_EQ(describe_mismatches(c, Tolerance{0, 0}), "all 4 elements match (exact)");
}

TEST(ToolsCompare, WorstMismatchIndexAndPosition) {
  //                            [0,0] [0,1] [0,2] [1,0] [1,1] [1,2]
  Tensor expected = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor got = f32({2, 3}, {1, 2.5f, 3, 4, 9, 6.00001f});
  Comparison c = compare_tensors(got, expected, Tolerance{});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatch_count, 2u);
  ASSERT_TRUE(c.worst.has_value());
  EXPECT_EQ(c.worst->index, 4u);
  EXPECT_EQ(c.worst->position, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.worst->got, 9.0);
  EXPECT_EQ(c.worst->expected, 5.0);
  EXPECT_EQ(describe_mismatches(c, Tolerance{}),
            "2 of 6 elements differ (atol 0.0001, rtol 0.0001); worst at index 4 [1, 1]: got 9, "
            "expected 5");
}

TEST(ToolsCompare, WorstIsMeasuredAgainstTolerance) {
  // Index 0 is off by 5 but within rtol (100); index 1 is off by 0.5 with no tolerance.
  Tolerance tol{0, 0.1};
  Comparison c = compare_tensors(f32({2}, {1005, 0.5f}), f32({2}, {1000, 0}), tol);
  EXPECT_EQ(c.mismatch_count, 1u);
  EXPECT_EQ(c.worst->index, 1u);
  c = compare_tensors(f32({3}, {1, 20, 11}), f32({3}, {0, 0, 0}), Tolerance{});
  EXPECT_EQ(c.worst->index, 1u);
  // Ties go to the first.
  c = compare_tensors(f32({3}, {0, 2, 2}), f32({3}, {0, 0, 0}), Tolerance{});
  EXPECT_EQ(c.worst->index, 1u);
}

TEST(ToolsCompare, NanMismatchIsWorst) {
  Comparison c = compare_tensors(f32({4}, {100, 1, kNan, kNan}), f32({4}, {0, 1, 2, kNan}),
                                 Tolerance{});
  EXPECT_EQ(c.mismatch_count, 2u);
  EXPECT_EQ(c.worst->index, 2u);
  EXPECT_TRUE(std::isnan(c.worst->got));
  EXPECT_EQ(c.worst->got_text, "nan");
  c = compare_tensors(f32({2}, {1, 2}), f32({2}, {kNan, 2}), Tolerance{});
  EXPECT_EQ(c.mismatch_count, 1u);
  EXPECT_EQ(c.worst->expected_text, "nan");
}

TEST(ToolsCompare, ScalarPosition) {
  Comparison c = compare_tensors(f32({}, {2}), f32({}, {1}), Tolerance{});
  EXPECT_EQ(c.worst->index, 0u);
  EXPECT_TRUE(c.worst->position.empty());
  EXPECT_EQ(describe_mismatches(c, Tolerance{}),
            "1 of 1 elements differ (atol 0.0001, rtol 0.0001); worst at index 0 []: got 2, "
            "expected 1");
}

TEST(ToolsCompare, ShapeOrDtypeDifferenceThrows) {
  try {
    compare_tensors(f32({1, 63}, std::vector<float>(63)), f32({1, 64}, std::vector<float>(64)),
                    Tolerance{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expected 1x64xf32, got 1x63xf32");
  }
  EXPECT_THROW(compare_tensors(make_tensor<int32_t>(INGOT_DTYPE_I32, {1}, {1}), f32({1}, {1}),
                               Tolerance{}),
               Error);
}

TEST(ToolsCompare, IntegersAreExact) {
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor expected = make_tensor<int64_t>(INGOT_DTYPE_I64, {2}, {big, 5});
  Tensor got = make_tensor<int64_t>(INGOT_DTYPE_I64, {2}, {big + 1, 5});
  Comparison c = compare_tensors(got, expected, Tolerance{0, 0});
  EXPECT_EQ(c.mismatch_count, 1u);
  EXPECT_EQ(c.worst->got_text, "1152921504606846978");
  EXPECT_EQ(c.worst->expected_text, "1152921504606846977");
  // With the default tolerance, 1 in 2^60 is within rtol.
  EXPECT_TRUE(compare_tensors(got, expected, Tolerance{}).ok());
  Tensor small_e = make_tensor<int8_t>(INGOT_DTYPE_I8, {3}, {-128, 0, 127});
  Tensor small_g = make_tensor<int8_t>(INGOT_DTYPE_I8, {3}, {127, 0, 127});
  c = compare_tensors(small_g, small_e, Tolerance{});
  EXPECT_EQ(c.mismatch_count, 1u);
  EXPECT_EQ(c.worst->index, 0u);
}

TEST(ToolsCompare, BoolComparesTruth) {
  Tensor expected = make_tensor<uint8_t>(INGOT_DTYPE_BOOL, {3}, {1, 0, 1});
  Tensor got = make_tensor<uint8_t>(INGOT_DTYPE_BOOL, {3}, {2, 0, 0});
  Comparison c = compare_tensors(got, expected, Tolerance{});
  EXPECT_EQ(c.mismatch_count, 1u);
  EXPECT_EQ(c.worst->index, 2u);
}

TEST(ToolsCompare, EmptyTensors) {
  Comparison c = compare_tensors(f32({0, 3}, {}), f32({0, 3}, {}), Tolerance{});
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.element_count, 0u);
}

TEST(ToolsCompare, UnravelIndex) {
  EXPECT_EQ(unravel_index(0, {2, 3, 4}), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(unravel_index(23, {2, 3, 4}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(unravel_index(13, {2, 3, 4}), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(unravel_index(0, {}), (std::vector<int64_t>{}));
  EXPECT_EQ(unravel_index(5, {10}), (std::vector<int64_t>{5}));
}

}  // namespace
}  // namespace ingot::tools
