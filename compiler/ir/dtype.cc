#include "compiler/ir/dtype.h"

#include "compiler/ir/error.h"

namespace ingot {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64:
    case DType::I64: return 8;
    case DType::F32:
    case DType::I32: return 4;
    case DType::I8:
    case DType::U8:
    case DType::Bool: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
  }
  return "?";
}

ingot_dtype_t dtype_to_abi(DType t) {
  switch (t) {
    case DType::F32: return INGOT_DTYPE_F32;
    case DType::I64: return INGOT_DTYPE_I64;
    case DType::I32: return INGOT_DTYPE_I32;
    case DType::I8: return INGOT_DTYPE_I8;
    case DType::U8: return INGOT_DTYPE_U8;
    case DType::Bool: return INGOT_DTYPE_BOOL;
    case DType::F64: break;
  }
  fail("dtype {} is not supported at run time", dtype_name(t));
}

const char* dtype_c_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "int64_t";
    case DType::I32: return "int32_t";
    case DType::I8: return "int8_t";
    case DType::U8: return "uint8_t";
    case DType::Bool: return "uint8_t";
  }
  return "void";
}

}  // namespace ingot
