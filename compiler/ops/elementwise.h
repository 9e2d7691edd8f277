// Shared machinery of the elementwise op families (elementwise_ops.cc, math_ops.cc):
// an op gives its scalar forms and one C expression; the shape rule, reference,
// lowering and epilogue form are all derived from them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "compiler/ops/op_table.h"

namespace ingot::ops {

// Bits of ElementwiseSpec::dtypes.
inline constexpr uint32_t kF32 = 1u << static_cast<int>(DType::F32);
inline constexpr uint32_t kI64 = 1u << static_cast<int>(DType::I64);
inline constexpr uint32_t kI32 = 1u << static_cast<int>(DType::I32);
inline constexpr uint32_t kI8 = 1u << static_cast<int>(DType::I8);
inline constexpr uint32_t kU8 = 1u << static_cast<int>(DType::U8);
inline constexpr uint32_t kBool = 1u << static_cast<int>(DType::Bool);
inline constexpr uint32_t kInts = kI64 | kI32;
inline constexpr uint32_t kNumeric = kF32 | kInts;

struct ElementwiseSpec {
  std::string type;
  int arity = 1;  // 1 or 2 (binary ops broadcast)
  // Scalar form on doubles: the reference for floats, and for integers when `iscalar`
  // is null (the result is then truncated toward zero).
  double (*scalar)(const Attrs& attrs, double a, double b) = nullptr;
  // Exact integer form, used by the reference when the first input is an integer.
  int64_t (*iscalar)(const Attrs& attrs, int64_t a, int64_t b) = nullptr;
  // C expression over the operands (already typed C values). Generated code is C11:
  // dtype-dependent forms use the _Generic helpers of ingot_kernel_common.h.
  std::string (*c_expr)(const Attrs& attrs, const std::string& a, const std::string& b) = nullptr;
  uint32_t dtypes = kF32;      // accepted dtypes of input 0 (bit per DType)
  bool bool_output = false;    // comparisons, IsNaN, ...: the output is bool
  uint32_t second_dtypes = 0;  // non-zero: input 1 may have another dtype (Pow)
};

// Registers |spec| as an elementwise OpDef in |table|.
void add_elementwise(std::map<std::string, OpDef>& table, const ElementwiseSpec& spec);

// A float attribute (an integer one converts), or |fallback|.
float attr_f(const Attrs& attrs, const char* key, float fallback);
int64_t attr_i(const Attrs& attrs, const char* key, int64_t fallback);

}  // namespace ingot::ops
