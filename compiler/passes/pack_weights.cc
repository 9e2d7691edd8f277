#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

namespace {

// [K, N] row-major → panels of `width` columns, [ceil(N / width), K, width], the last
// panel zero-padded: each microkernel tile then reads its B rows as one contiguous
// stream instead of `width` floats every N.
Tensor to_panels(const Tensor& b, int64_t width) {
  int64_t k = b.shape[0], n = b.shape[1];
  int64_t panels = (n + width - 1) / width;
  Tensor packed(DType::F32, {panels, k, width});
  float* dst = packed.data<float>();
  const float* src = b.data<float>();
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < width; ++j) {
        int64_t col = p * width + j;
        dst[(p * k + r) * width + j] = col < n ? src[r * n + col] : 0.0f;
      }
  return packed;
}

bool is_constant_2d_f32(const Value* v) {
  return v->is_constant() && v->dtype == DType::F32 && v->shape.size() == 2;
}

}  // namespace

// Gemm kernels read B as row-major [K, N]; a constant B stored [N, K] (transB = 1, as
// every Linear layer exports) is transposed once here instead of at every call. With a
// panel width (the target's GEMM tile width), constant B of Gemm and of a MatMul whose
// B is one 2-D matrix is then stored as tile-wide panels; the node records the width
// and the logical column count (attributes `b_panel_width`, `b_cols`).
void pack_weights(Graph& graph, int64_t panel_width) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    bool gemm = node.op_type == "Gemm", matmul = node.op_type == "MatMul";
    if ((!gemm && !matmul) || node.attrs.count("b_panel_width") || !is_constant_2d_f32(node.inputs[1])) continue;
    if (gemm && node.attr_int("transB", 0) != 0) {
      const Tensor& b = *node.inputs[1]->constant;
      int64_t n = b.shape[0], k = b.shape[1];
      Tensor transposed(DType::F32, {k, n});
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) transposed.data<float>()[j * n + i] = b.data<float>()[i * k + j];
      node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".b_packed"), std::move(transposed));
      node.attrs["transB"] = int64_t{0};
    }
    if (panel_width <= 0) continue;
    // A 1-D A (MatMul's vector promotion) keeps the plain layout: its output drops N's
    // axis handling elsewhere, and it is one row anyway.
    if (matmul && node.inputs[0]->shape.size() < 2) continue;
    const Tensor& b = *node.inputs[1]->constant;
    int64_t n = b.shape[1];
    node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".b_panels"), to_panels(b, panel_width));
    node.attrs["b_panel_width"] = panel_width;
    node.attrs["b_cols"] = n;
  }
}

}  // namespace ingot::passes
