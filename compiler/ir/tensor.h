// A tensor known at compile time: weights, folded constants, reference-impl data.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"

namespace ingot {

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& shape);
std::string shape_str(const Shape& shape);  // "1x3x224x224" ("scalar" for rank 0)
std::vector<int64_t> strides_of(const Shape& shape);  // row-major, in elements

struct Tensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)), bytes(num_elements(shape) * dtype_size(t)) {}

  int64_t numel() const { return num_elements(shape); }
  size_t byte_size() const { return bytes.size(); }

  template <typename T>
  T* data() { return reinterpret_cast<T*>(bytes.data()); }
  template <typename T>
  const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <typename T>
  std::span<T> span() { return {data<T>(), static_cast<size_t>(numel())}; }
  template <typename T>
  std::span<const T> span() const { return {data<T>(), static_cast<size_t>(numel())}; }

  // Element i converted to double / int64 regardless of dtype (for shape math).
  double as_double(int64_t i) const;
  int64_t as_int(int64_t i) const;
  void set_from_double(int64_t i, double v);
  // All elements as int64 (shape tensors, axes, indices).
  std::vector<int64_t> to_ints() const;

  static Tensor from_f32(Shape s, std::vector<float> v);
  static Tensor from_i64(Shape s, std::vector<int64_t> v);
};

}  // namespace ingot
