// Element types of tensor values.
#pragma once

#include <cstdint>
#include <string_view>

#include "ingot/abi.h"

namespace ingot {

enum class DType : uint8_t { F32, F64, I64, I32, I8, U8, Bool };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "i64", ...
ingot_dtype_t dtype_to_abi(DType t);   // throws for types the runtime lacks
const char* dtype_c_type(DType t);     // "float", "int64_t", ...

}  // namespace ingot
