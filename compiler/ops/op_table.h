// The op table: every op ingot knows declares, in one place, its shape rule, its
// reference implementation (plain C++: the constant folder and the test oracle) and
// its lowering to C. Adding an op means adding one entry in one family file.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/checked.h"
#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"

namespace ingot::ops {

using Attrs = std::map<std::string, AttrValue>;

// What of the target decides how a node is computed: its ISA (INGOT_FEATURE_* bits,
// ingot_arch_t) and cache sizes (read from the CPU for `host`, given by each named
// target otherwise). Filled by the driver from compiler/target; ops never include it.
struct TargetTraits {
  uint32_t features = 0;
  uint32_t arch = 0;
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 0;  // 0: none or unknown
  uint32_t workers = 1;  // step lists the plan is compiled for (--workers)
  bool avx512_full_rate = false;  // target::Target::avx512_full_rate
};

struct BroadcastLoops;

// What a lowering sees: the node, C names of its buffers and the fused epilogue.
struct LoweringContext {
  const Node& node;
  std::vector<std::string> in{};   // typed C pointer per node input ("" when omitted)
  std::vector<std::string> out{};  // typed C pointer per node output
  // Statements that apply the fused epilogue to the float variable `var` holding the
  // output element at flat index `flat_index` (an expression). Empty when none.
  std::function<std::string(const std::string& var, const std::string& flat_index)> epilogue{};
  // The same, for lowerings that also know the coordinate along the output's last
  // dimension (`col`); lets bias-like operands be indexed without a modulo.
  std::function<std::string(const std::string& var, const std::string& flat_index, const std::string& col)>
      epilogue_at{};
  // The same, for a lowering that runs a broadcast_loops nest (`o`, `i`) computed over
  // its own operands and `epilogue_operands` too: every epilogue operand is indexed
  // by the nest (once per `o` when it is per-channel) instead of through divisions of
  // the flat index.
  std::function<std::string(const std::string& var, const BroadcastLoops& loops)> epilogue_nested{};
  std::vector<Shape> epilogue_operands{};
  // C pointer per epilogue op's operand, by the op's index ("" for an op without one).
  std::vector<std::string> epilogue_in{};
  bool has_epilogue = false;
  // Set by a lowering that applied `epilogue` itself; otherwise codegen appends a
  // sweep that applies it to output 0 after the body.
  bool epilogue_applied = false;
  std::set<std::string> headers{};  // kernel headers the body needs
  std::string kernel_name{};        // dtype_op_shape..., set by the lowering
  // What the target's code may use (INGOT_FEATURE_* bits, ingot_arch_t), so a
  // lowering can pick an ISA-specific microkernel.
  uint32_t target_features = 0;
  uint32_t target_arch = 0;
  int64_t l1d_bytes = 0;  // the target's L1 data cache (0: unknown), for K blocks
  int64_t l2_bytes = 0;   // the target's L2 per core (0: unknown), for loop orders
  uint32_t workers = 1;   // step lists the plan is compiled for: splits balance over them
  std::string scratch{};  // float* to the step's scratch bytes, when scratch_bytes asked
  // Workgroups: a lowering whose output splits into K independent parts sets this to K
  // and emits a body that computes exactly the workgroups [wg_begin, wg_end) of K (the
  // kernel's uint32_t parameters); [0, K) is the whole dispatch. Parts write disjoint
  // output elements (fused epilogue included), each element by the same arithmetic
  // whatever the range (bitwise equal to the unsplit run), and never split a
  // reduction. A part gets its own scratch, so it prepares whatever it reads there.
  // 1: the body ignores the range and the dispatch runs as [0, 1).
  int64_t wg_count = 1;
  // What each workgroup costs relative to the others, when they differ (a narrower edge
  // tile, a short last block): wg_count entries, so the partition splits the work, not
  // the count, evenly. Empty: all cost the same.
  std::vector<double> wg_weights{};
  // When workgroup w of a split lowering covers exactly the flat output elements
  // [w * wg_elements, (w + 1) * wg_elements) (channel planes, rows), the lowering may
  // leave the epilogue to codegen's sweep, which then covers the same elements. 0:
  // unknown, so a lowering that leaves the epilogue to the sweep runs unsplit.
  int64_t wg_elements = 0;
  // An op with phases (OpDef::phases): the workgroups of each phase, numbered on from
  // one phase to the next (the first phase [0, n0), the second [n0, n0 + n1), ...);
  // wg_count is their sum. A call always stays within one phase.
  std::vector<int64_t> phase_workgroups{};
};

// The work of one phase of a dispatch (OpDef::phases), for the cost model and the
// module's per-step counts.
struct PhaseWork {
  uint64_t flops = 0;
  uint64_t bytes = 0;  // bytes it reads and writes outside its scratch
};

struct OpDef {
  std::string type;
  // Sets dtype and shape of every output from the inputs and attributes; throws Error.
  void (*infer)(Node& node) = nullptr;
  // Computes outputs from inputs (all known). Null: the op cannot be folded.
  void (*reference)(const Node& node, const std::vector<const Tensor*>& in, std::vector<Tensor>& out) = nullptr;
  // Emits the C statements of a dispatch. Null: the op must fold away at compile time.
  std::string (*lower)(LoweringContext& ctx) = nullptr;
  // Elementwise ops: arity and scalar forms, shared by reference, lowering and fusion.
  int elementwise_arity = 0;  // 0 = not elementwise
  double (*scalar)(const Attrs& attrs, double a, double b) = nullptr;
  std::string (*c_expr)(const Attrs& attrs, const std::string& a, const std::string& b) = nullptr;
  // The output is the input's bytes under another shape (Reshape, Flatten, ...).
  bool is_alias = false;
  // Made by a pass (InvertedResidual), never read from a model: the importer refuses it.
  bool internal = false;
  // Folds from the input's shape alone (Shape, Size).
  bool folds_from_shape = false;
  // Bytes of arena scratch the lowering needs while it runs (im2col panels); the
  // planner gives it a lifetime of one step. Null: none.
  uint64_t (*scratch_bytes)(const Node& node) = nullptr;
  // Floating-point operations of one run, 2 per multiply-add of the op as written
  // (a Winograd conv counts its direct form). Null: see node_flops.
  uint64_t (*flops)(const Node& node) = nullptr;
  // A dispatch computed in phases that must follow one another (a recurrence: the
  // input projections of all time steps, then one phase per step). Each phase is its
  // own plan step over its own range of the kernel's workgroups, so workers split
  // every phase and the plan places its syncs between phases. Every part of every
  // phase shares one scratch, which carries the state from phase to phase. Null, or
  // fewer than two phases: one step, as for any op.
  std::vector<PhaseWork> (*phases)(const Node& node) = nullptr;
};

// Looks up an op; nullptr when ingot does not implement it.
const OpDef* find_op(const std::string& type);
// Attributes the passes record on ONNX ops (a chosen strategy, a weight layout they
// packed, a fused input, the worker count). A model that set one would choose for the
// compiler and meet layouts it never packed, so the importer refuses them.
bool is_compiler_attribute(const std::string& name);
std::vector<std::string> supported_ops();

// Floating-point operations of a dispatch node, the one count behind the module's
// per-step work: the op's `flops`; or, for an elementwise op, one per output element;
// else 0 (data movement, pools, reductions, normalizations). Each fused epilogue op
// adds one per output element.
uint64_t node_flops(const Node& node);

// Whether a node whose inputs are all known should be evaluated at compile time: its
// outputs fit within kMaxFoldedBytes or its inputs' bytes (ir/checked.h). A bigger
// node with a lowering runs at run time instead; one without (it must fold) fails
// naming the node and the size.
bool fold_at_compile_time(const Node& node);

// Runs the op's reference implementation on constant inputs.
std::vector<Tensor> run_reference(const Node& node, const std::vector<const Tensor*>& inputs);

// ---- helpers shared by op families ----
Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node);
// Index into a tensor of shape `in`, broadcast to `out`, for the output element at
// flat index `flat` (C expression); "0" for scalars and `flat` when shapes match.
std::string broadcast_index_expr(const Shape& out, const Shape& in, const std::string& flat);
// A loop nest for elementwise work over |out| whose operands have |operands| shapes:
// `o` over the output dims before `split`, `i` over the rest, split where every
// operand either follows the output or stays fixed over the trailing dims (a
// per-channel scale over H x W), so the inner loop is contiguous and the broadcast
// index is computed once per `o`. Not nested when no split helps.
struct BroadcastLoops {
  bool nested = false;
  size_t split = 0;
  int64_t outer = 1, inner = 1;
};
BroadcastLoops broadcast_loops(const Shape& out, const std::vector<Shape>& operands);
// The index into an operand of shape |in| at (o, i) of |loops| (at flat `i` when the
// loops are not nested).
std::string broadcast_loop_index(const BroadcastLoops& loops, const Shape& out, const Shape& in);
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node);
void set_output(Node& node, size_t i, DType dtype, Shape shape);
const Tensor& constant_input(const Node& node, size_t i, const char* what);
std::string c_float(double v);  // a C float literal that round-trips
// Workgroups over a loop's units [0, |total|), |per| units each: the header
// `v = first, v_end = end; v < v_end` (no increment) of a loop over the units that
// workgroups [wg_begin, wg_end) own (`v = 0; v < total` when there is one workgroup).
// Workgroups per loop: ceil(total / per), at least 1.
std::string workgroup_loop(const std::string& v, int64_t per, int64_t total);
int64_t workgroups_of(int64_t per, int64_t total);
// Elements per workgroup for elementwise-shaped work over |total| elements: whole runs
// of |run| elements (a loop nest's inner extent; 1 when flat) of about 4096 elements.
int64_t elementwise_chunk(int64_t run);

// Family registration (each family file defines one).
void register_elementwise_ops(std::map<std::string, OpDef>& table);
void register_shape_ops(std::map<std::string, OpDef>& table);
void register_nn_ops(std::map<std::string, OpDef>& table);
void register_conv_ops(std::map<std::string, OpDef>& table);
void register_block_ops(std::map<std::string, OpDef>& table);     // fused MobileNet blocks
void register_gemm_ops(std::map<std::string, OpDef>& table);
void register_math_ops(std::map<std::string, OpDef>& table);      // more elementwise math, logic, comparison
void register_reduce_ops(std::map<std::string, OpDef>& table);    // reductions, ArgMax/ArgMin
void register_tensor_ops(std::map<std::string, OpDef>& table);    // Split, Pad, Resize, Tile, Expand, Where, ...
void register_sequence_ops(std::map<std::string, OpDef>& table);  // LSTM, GRU, RNN
void register_norm_ops(std::map<std::string, OpDef>& table);      // LayerNorm, InstanceNorm, LRN, ...

}  // namespace ingot::ops
