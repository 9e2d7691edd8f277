#include "compiler/ops/op_table.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

// Gemm kernels read B as row-major [K, N]; a constant B stored [N, K] (transB = 1, as
// every Linear layer exports) is transposed once here instead of at every call.
void pack_weights(Graph& graph) {
  for (auto& owned : graph.nodes()) {
    Node& node = *owned;
    if (node.op_type != "Gemm" || node.attr_int("transB", 0) == 0 || !node.inputs[1]->is_constant()) continue;
    const Tensor& b = *node.inputs[1]->constant;
    int64_t n = b.shape[0], k = b.shape[1];
    Tensor packed(DType::F32, {k, n});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) packed.data<float>()[j * n + i] = b.data<float>()[i * k + j];
    node.inputs[1] = graph.add_constant(graph.unique_name(node.name + ".b_packed"), std::move(packed));
    node.attrs["transB"] = int64_t{0};
  }
}

}  // namespace ingot::passes
