// Geometry of ops whose shape rule, reference, C lowering and device lowerings
// (compiler/codegen/glsl) must agree: one helper per op, computed from the node.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace ingot::ops {

struct GemmGeometry {
  int64_t M, K, N;
  bool trans_a, trans_b;
  float alpha, beta;
};

struct MatMulGeometry {
  Shape batch, batch_a, batch_b;
  int64_t M, K, N;
  Shape out;
};

struct PoolGeometry {
  int64_t N = 1, C = 1;
  std::vector<int64_t> in, kernel, strides, dilations, pb, pe, out;
  int64_t in_size() const { return num_elements(in); }
  int64_t out_size() const { return num_elements(out); }
};

struct SoftmaxGeometry {
  int64_t outer, n, inner;
};

struct SliceParams {
  std::vector<int64_t> start, step;  // per dim of the input
  Shape out;
};

struct LayerNormGeometry {
  int64_t axis, outer, inner;
  Shape inner_shape, stat_shape;
};

struct ReduceGeometry {
  Shape in;
  std::vector<bool> reduced;  // per input dim
  Shape out;                  // with or without the reduced dims (keepdims)
  bool noop = false;          // empty axes with noop_with_empty_axes: the identity
  int64_t kept_count = 1;     // output elements
  int64_t reduced_count = 1;  // elements combined into each output
};

// Data movement as per-dimension offset tables (Tile, Expand, Pad, DepthToSpace,
// SpaceToDepth): output element k, as coordinates (o_0, ..., o_{r-1}) of `iter` in
// row-major order (a shape as fine as the op needs), reads input element
// sum_d map[d][o_d]; an entry of -1 means "outside": the element is the fill value.
struct MovementMap {
  Shape iter;
  std::vector<std::vector<int64_t>> map;
  double fill = 0;        // Pad's constant value (0 for the others)
  int fill_input = -1;    // Pad: the fill is input 2, computed at run time
};
// |node|'s map when its op is one of those above; false for any other op.
bool movement_map(const Node& node, MovementMap& out);

GemmGeometry gemm_geometry(const Node& node);
MatMulGeometry matmul_geometry(const Node& node);
// A Transpose's permutation (its `perm`, or the axes reversed), checked.
std::vector<int64_t> transpose_perm(const Node& node);
// A MatMul that absorbed Transposes (absorb_transposes) reads operand |i| (0: A,
// 1: B) as transpose(input i, perm) and writes transpose(product, perm) (|i| 2):
// each axis of the logical operand or product, its element stride in the bytes the
// node reads or writes. Contiguous strides where the node has no such perm.
std::vector<int64_t> matmul_operand_strides(const Node& node, int i);
// Whether |node| reads or writes any operand through an absorbed Transpose.
bool matmul_has_perms(const Node& node);
PoolGeometry pool_geometry(const Node& node);
SoftmaxGeometry softmax_geometry(const Node& node);
SliceParams slice_params(const Node& node);
LayerNormGeometry layer_norm_geometry(const Node& node);
ReduceGeometry reduce_geometry(const Node& node);

}  // namespace ingot::ops
