#include "compiler/ir/tensor.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "compiler/ir/error.h"

namespace ingot {

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

double Tensor::as_double(int64_t i) const {
  switch (dtype) {
    case DType::F32: return data<float>()[i];
    case DType::F64: return data<double>()[i];
    case DType::I64: return static_cast<double>(data<int64_t>()[i]);
    case DType::I32: return data<int32_t>()[i];
    case DType::I8: return data<int8_t>()[i];
    case DType::U8:
    case DType::Bool: return data<uint8_t>()[i];
  }
  return 0;
}

namespace {

// static_cast from double is undefined outside the target's range and for NaN; a
// model's floats can be anything (a float tensor used as a shape, a Cast of 1e300).
// Saturate instead, NaN as 0, so the checks after see a defined value. Narrower
// integers wrap from int64, as before (C++20 defines that conversion).
template <typename T>
T saturate_cast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

}  // namespace

int64_t Tensor::as_int(int64_t i) const {
  switch (dtype) {
    case DType::I64: return data<int64_t>()[i];
    case DType::I32: return data<int32_t>()[i];
    default: return saturate_cast<int64_t>(as_double(i));
  }
}

void Tensor::set_from_double(int64_t i, double v) {
  switch (dtype) {
    case DType::F32: data<float>()[i] = static_cast<float>(v); break;
    case DType::F64: data<double>()[i] = v; break;
    case DType::I64: data<int64_t>()[i] = saturate_cast<int64_t>(v); break;
    case DType::I32: data<int32_t>()[i] = static_cast<int32_t>(saturate_cast<int64_t>(v)); break;
    case DType::I8: data<int8_t>()[i] = static_cast<int8_t>(saturate_cast<int64_t>(v)); break;
    case DType::U8: data<uint8_t>()[i] = static_cast<uint8_t>(saturate_cast<int64_t>(v)); break;
    case DType::Bool: data<uint8_t>()[i] = v != 0; break;
  }
}

std::vector<int64_t> Tensor::to_ints() const {
  std::vector<int64_t> out(numel());
  for (int64_t i = 0; i < numel(); ++i) out[i] = as_int(i);
  return out;
}

Tensor Tensor::from_f32(Shape s, std::vector<float> v) {
  Tensor t(DType::F32, std::move(s));
  if (static_cast<int64_t>(v.size()) != t.numel()) fail("from_f32: {} values for shape {}", v.size(), shape_str(t.shape));
  // An empty vector's data() may be null, and memcpy's pointers may not be, even for 0.
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

Tensor Tensor::from_i64(Shape s, std::vector<int64_t> v) {
  Tensor t(DType::I64, std::move(s));
  if (static_cast<int64_t>(v.size()) != t.numel()) fail("from_i64: {} values for shape {}", v.size(), shape_str(t.shape));
  // An empty vector's data() may be null, and memcpy's pointers may not be, even for 0.
  if (!t.bytes.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

}  // namespace ingot
