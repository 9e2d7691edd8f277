// Math, logic and reduction ops: hand-computed cases for the trickiest references
// (Mod's two sign rules, integer Div, ArgMax/ArgMin tie order, reductions with empty
// axes), the generated kernels checked against those references, and the accuracy of
// the libm-free scalar math in kernels/ingot_kernel_common.h against the C library.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ops/op_table.h"
#include "tests/unit/test_util.h"

namespace ingot {
namespace {

using testing::f32;
using testing::i64;
using testing::Tolerance;

Tensor i32(Shape s, std::vector<int32_t> v) {
  Tensor t(DType::I32, std::move(s));
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

Tensor bools(Shape s, std::vector<uint8_t> v) {
  Tensor t(DType::Bool, std::move(s));
  std::copy(v.begin(), v.end(), t.bytes.begin());
  return t;
}

std::vector<int64_t> ints(const Tensor& t) { return t.to_ints(); }
std::vector<float> floats(const Tensor& t) { return testing::values_f32(t); }

// One node over run-time inputs (or constants, where `constant` says so): its shape
// rule, then its reference.
class MathOpsTest : public ::testing::Test {
 protected:
  Tensor run(const std::string& type, const std::vector<Tensor>& ins, ops::Attrs attrs = {},
             std::vector<bool> constant = {}, int opset = 13) {
    std::vector<Value*> values;
    std::vector<const Tensor*> tensors;
    for (size_t i = 0; i < ins.size(); ++i) {
      bool k = i < constant.size() && constant[i];
      std::string name = g_.unique_name("v");
      values.push_back(k ? g_.add_constant(name, ins[i]) : g_.add_value(name, ins[i].dtype, ins[i].shape));
      tensors.push_back(&ins[i]);
    }
    node_ = testing::add_op(g_, type, values, std::move(attrs), opset);
    Tensor out = ops::run_reference(*node_, tensors).at(0);
    EXPECT_EQ(out.shape, node_->outputs[0]->shape);
    return out;
  }

  Graph g_;
  Node* node_ = nullptr;
};

// ---- Mod ----------------------------------------------------------------------

TEST_F(MathOpsTest, ModIntegerTakesTheDivisorsSign) {
  // numpy.mod: -4 mod 3 = 2, 4 mod -3 = -2, -4 mod -3 = -1, 7 mod 7 = 0.
  Tensor y = run("Mod", {i64({5}, {-4, 4, -4, 7, 5}), i64({5}, {3, -3, -3, 7, 2})});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, -2, -1, 0, 1}));
}

TEST_F(MathOpsTest, ModFmodTakesTheDividendsSign) {
  // numpy.fmod (C %): -4 fmod 3 = -1, 4 fmod -3 = 1.
  Tensor y = run("Mod", {i64({4}, {-4, 4, -4, 5}), i64({4}, {3, -3, -3, 2})}, {{"fmod", int64_t{1}}});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{-1, 1, -1, 1}));
}

TEST_F(MathOpsTest, ModFloat) {
  Tensor y =
      run("Mod", {f32({4}, {-4.5f, 4.5f, 5.0f, -1.0f}), f32({4}, {2.0f, -2.0f, 2.5f, 3.0f})}, {{"fmod", int64_t{1}}});
  EXPECT_EQ(floats(y), (std::vector<float>{-0.5f, 0.5f, 0.0f, -1.0f}));
  Tensor p = run("Mod", {f32({4}, {-4.5f, 4.5f, 5.0f, -1.0f}), f32({4}, {2.0f, -2.0f, 2.5f, 3.0f})});
  EXPECT_EQ(floats(p), (std::vector<float>{1.5f, -1.5f, 0.0f, 2.0f}));
}

TEST_F(MathOpsTest, ModBroadcastsAndZeroDivisorGivesZero) {
  Tensor y = run("Mod", {i32({2, 2}, {7, -7, 9, 0}), i32({2}, {0, 4})});
  EXPECT_EQ(y.dtype, DType::I32);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{0, 1, 0, 0}));
}

// ---- integer Div ----------------------------------------------------------------

TEST_F(MathOpsTest, IntegerDivTruncatesTowardZero) {
  Tensor y = run("Div", {i64({6}, {7, -7, 7, -7, 6, 1}), i64({6}, {2, 2, -2, -2, 3, 0})});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{3, -3, -3, 3, 2, 0}));  // a zero divisor gives 0, no trap
  Tensor z = run("Div", {i32({2}, {-9, 9}), i32({1}, {4})});
  EXPECT_EQ(z.dtype, DType::I32);
  EXPECT_EQ(ints(z), (std::vector<int64_t>{-2, 2}));
}

TEST_F(MathOpsTest, IntegerPowIsExact) {
  Tensor y = run("Pow", {i64({4}, {3, -2, 10, 5}), i64({4}, {4, 3, 15, -1})});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{81, -8, 1000000000000000, 0}));
  Tensor z = run("Pow", {i32({2}, {2, 3}), f32({2}, {3.0f, 0.5f})});  // int base, float exponent
  EXPECT_EQ(z.dtype, DType::I32);
  EXPECT_EQ(ints(z), (std::vector<int64_t>{8, 1}));
}

TEST_F(MathOpsTest, ComparisonsAndLogicGiveBool) {
  Tensor y = run("LessOrEqual", {f32({3}, {1, 2, 3}), f32({1}, {2})});
  EXPECT_EQ(y.dtype, DType::Bool);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 1, 0}));
  Tensor x = run("Xor", {bools({4}, {0, 0, 1, 1}), bools({4}, {0, 1, 0, 1})});
  EXPECT_EQ(ints(x), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_THROW(run("And", {f32({1}, {1}), f32({1}, {1})}), Error);  // bool only
}

TEST_F(MathOpsTest, RoundIsHalfToEven) {
  Tensor y = run("Round", {f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4999998f, -2.6f})});
  EXPECT_EQ(floats(y), (std::vector<float>{0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 2.0f, -3.0f}));
}

TEST_F(MathOpsTest, VariadicMaxBroadcasts) {
  Tensor y = run("Max", {f32({2, 1}, {1, 5}), f32({3}, {0, 2, 6}), f32({1}, {3})});
  EXPECT_EQ(y.shape, (Shape{2, 3}));
  EXPECT_EQ(floats(y), (std::vector<float>{3, 3, 6, 5, 5, 6}));
  Tensor m = run("Mean", {f32({2}, {1, 2}), f32({2}, {2, 4}), f32({2}, {3, 9})});
  EXPECT_EQ(floats(m), (std::vector<float>{2, 5}));
}

TEST_F(MathOpsTest, ClipWithRunTimeBoundsReadsThem) {
  Tensor y = run("Clip", {f32({4}, {-3, 0, 2, 9}), f32({}, {-1}), f32({}, {4})});
  EXPECT_EQ(floats(y), (std::vector<float>{-1, 0, 2, 4}));
  Tensor z = run("Clip", {i64({3}, {-5, 5, 50}), i64({}, {0})});  // no max
  EXPECT_EQ(ints(z), (std::vector<int64_t>{0, 5, 50}));
}

// ---- ArgMax / ArgMin ----------------------------------------------------------------

TEST_F(MathOpsTest, ArgMaxTiesGoToTheFirstOrTheLastIndex) {
  Tensor x = f32({2, 4}, {1, 3, 3, 0, 2, 2, 2, 2});
  EXPECT_EQ(ints(run("ArgMax", {x}, {{"axis", int64_t{1}}})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ints(run("ArgMax", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}})),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(node_->outputs[0]->shape, (Shape{2, 1}));
  Tensor n = run("ArgMin", {x}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}, {"select_last_index", int64_t{1}}});
  EXPECT_EQ(n.shape, (Shape{4}));
  EXPECT_EQ(ints(n), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(n.dtype, DType::I64);
}

TEST_F(MathOpsTest, ArgMaxNegativeAxis) {
  Tensor x = f32({2, 2, 2}, {0, 9, 1, 2, 5, 4, 3, 8});
  Tensor y = run("ArgMax", {x}, {{"axis", int64_t{-2}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(y.shape, (Shape{2, 2}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 0, 0, 1}));
}

// ---- reductions -------------------------------------------------------------------

TEST_F(MathOpsTest, ReduceWithEmptyAxesReducesEverythingOrNothing) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor all = run("ReduceSum", {x, i64({0}, {})}, {}, {false, true});
  EXPECT_EQ(all.shape, (Shape{1, 1}));
  EXPECT_EQ(floats(all), (std::vector<float>{21}));
  Tensor none = run("ReduceSum", {x, i64({0}, {})}, {{"noop_with_empty_axes", int64_t{1}}}, {false, true});
  EXPECT_EQ(none.shape, (Shape{2, 3}));
  EXPECT_EQ(floats(none), floats(x));
  Tensor no_input = run("ReduceMax", {x}, {{"keepdims", int64_t{0}}});  // no axes attribute: all
  EXPECT_EQ(no_input.shape, (Shape{}));
  EXPECT_EQ(floats(no_input), (std::vector<float>{6}));
}

TEST_F(MathOpsTest, ReduceOverSeveralAxes) {
  Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = run("ReduceMean", {x}, {{"axes", std::vector<int64_t>{0, -1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(y.shape, (Shape{2}));
  EXPECT_EQ(floats(y), (std::vector<float>{3.5f, 5.5f}));  // (1+2+5+6)/4, (3+4+7+8)/4
  Tensor l2 = run("ReduceL2", {f32({2, 2}, {3, 4, 6, 8})}, {{"axes", std::vector<int64_t>{1}}});
  EXPECT_EQ(floats(l2), (std::vector<float>{5, 10}));
  Tensor lse = run("ReduceLogSumExp", {f32({2}, {1000, 1000})}, {{"axes", std::vector<int64_t>{0}}});
  EXPECT_NEAR(floats(lse)[0], 1000 + std::log(2.0), 1e-3);  // no overflow
  Tensor p = run("ReduceProd", {i64({2, 2}, {2, 3, -4, 5})}, {{"axes", std::vector<int64_t>{0}}});
  EXPECT_EQ(ints(p), (std::vector<int64_t>{-8, 15}));
}

TEST_F(MathOpsTest, RunTimeAxesAreAnUnsupportedInput) {
  try {
    run("ReduceSum", {f32({2}, {1, 2}), i64({1}, {0})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be known at compile time"), std::string::npos) << e.what();
  }
}

// ---- generated kernels against the references -----------------------------------

// One graph: the node over run-time inputs, compiled for the host and run.
Tensor run_kernel(const std::string& type, const std::vector<Tensor>& ins, ops::Attrs attrs = {},
                  std::vector<bool> constant = {}) {
  Graph g;
  std::vector<Value*> values;
  std::vector<Tensor> runtime_inputs;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (i < constant.size() && constant[i]) {
      values.push_back(g.add_constant(g.unique_name("k"), ins[i]));
    } else {
      values.push_back(testing::add_input(g, g.unique_name("x"), ins[i].shape, ins[i].dtype));
      runtime_inputs.push_back(ins[i]);
    }
  }
  Node* n = testing::add_op(g, type, values, std::move(attrs));
  g.outputs.push_back(n->outputs[0]);
  return testing::compile_and_run(g, runtime_inputs).at(0);
}

Tensor reference(const std::string& type, const std::vector<Tensor>& ins, ops::Attrs attrs = {},
                 std::vector<bool> constant = {}) {
  Graph g;
  std::vector<Value*> values;
  std::vector<const Tensor*> tensors;
  for (size_t i = 0; i < ins.size(); ++i) {
    bool k = i < constant.size() && constant[i];
    values.push_back(k ? g.add_constant(g.unique_name("k"), ins[i])
                       : g.add_value(g.unique_name("x"), ins[i].dtype, ins[i].shape));
    tensors.push_back(&ins[i]);
  }
  Node* n = testing::add_op(g, type, values, std::move(attrs));
  return ops::run_reference(*n, tensors).at(0);
}

void expect_kernel_matches(const std::string& type, const std::vector<Tensor>& ins, ops::Attrs attrs = {},
                           std::vector<bool> constant = {}, Tolerance tol = Tolerance::exact()) {
  Tensor got = run_kernel(type, ins, attrs, constant);
  Tensor want = reference(type, ins, attrs, constant);
  EXPECT_TRUE(testing::tensors_near(got, want, tol)) << type;
}

TEST(MathKernelsTest, IntegerArithmeticMatchesTheReference) {
  Tensor a = testing::random_i64({3, 5}, 1, -50, 50);
  Tensor b = testing::random_i64({5}, 2, -7, 7);  // includes 0: no trap, result 0
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) expect_kernel_matches(op, {a, b});
  expect_kernel_matches("Mod", {a, b});
  expect_kernel_matches("Mod", {a, b}, {{"fmod", int64_t{1}}});
  expect_kernel_matches("Pow", {testing::random_i64({6}, 3, -4, 4), testing::random_i64({6}, 4, 0, 5)});
  expect_kernel_matches("Clip", {a, i64({}, {-10}), i64({}, {20})});  // run-time bounds
  expect_kernel_matches("Abs", {a});
  expect_kernel_matches("Sign", {a});
}

TEST(MathKernelsTest, FloatModComparisonsAndLogic) {
  Tensor a = testing::random_f32({4, 6}, 5, -10, 10);
  Tensor b = testing::random_f32({6}, 6, -3, 3);
  expect_kernel_matches("Mod", {a, b}, {{"fmod", int64_t{1}}}, {}, Tolerance::relative(1e-5, 1e-5));
  expect_kernel_matches("Mod", {a, b}, {}, {}, Tolerance::relative(1e-5, 1e-5));
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    expect_kernel_matches(op, {a, b});
  Tensor p = bools({2, 3}, {0, 1, 1, 0, 0, 1}), q = bools({3}, {1, 0, 1});
  for (const char* op : {"And", "Or", "Xor"}) expect_kernel_matches(op, {p, q});
  expect_kernel_matches("Not", {p});
  Tensor special = f32({4}, {NAN, INFINITY, -INFINITY, 1.0f});
  expect_kernel_matches("IsNaN", {special});
  expect_kernel_matches("IsInf", {special}, {{"detect_negative", int64_t{0}}});
}

TEST(MathKernelsTest, ReductionsAndArgMaxMatchTheReference) {
  Tensor x = testing::random_f32({3, 4, 5}, 7);
  Tolerance tol = Tolerance::relative(1e-5, 1e-6);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSumExp"}) {
    expect_kernel_matches(op, {x}, {{"axes", std::vector<int64_t>{0, 2}}}, {}, tol);
    expect_kernel_matches(op, {x}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}}, {}, tol);
    expect_kernel_matches(op, {x}, {}, {}, tol);  // all axes
  }
  // Contiguous runs of 16 or more (the trailing axes, size-1 axes between them):
  // the vectorized sums, with their unrolled part and a remainder.
  Tensor planes = testing::random_f32({2, 3, 1, 9, 11}, 11);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceL2", "ReduceSumSquare"}) {
    expect_kernel_matches(op, {planes}, {{"axes", std::vector<int64_t>{3, 4}}}, {}, tol);
    expect_kernel_matches(op, {planes}, {{"axes", std::vector<int64_t>{2, 3, -1}}, {"keepdims", int64_t{0}}}, {}, tol);
    expect_kernel_matches(op, {planes}, {{"axes", std::vector<int64_t>{0, 3, 4}}}, {}, tol);  // not a trailing run
  }
  expect_kernel_matches("ReduceLogSum", {testing::random_f32({3, 4}, 8, 0.1f, 2.0f)},
                        {{"axes", std::vector<int64_t>{1}}}, {}, tol);
  expect_kernel_matches("ReduceSum", {x, i64({0}, {})}, {{"noop_with_empty_axes", int64_t{1}}}, {false, true}, tol);
  expect_kernel_matches("ReduceSum", {x, i64({1}, {1})}, {}, {false, true}, tol);
  expect_kernel_matches("ReduceMax", {testing::random_i64({4, 3}, 9, -9, 9)}, {{"axes", std::vector<int64_t>{0}}});
  Tensor ties = f32({2, 2, 3}, {1, 1, 0, 2, 2, 2, 5, 4, 5, 0, 0, 0});
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int64_t axis : {0, 1, 2, -1})
      for (int64_t last : {0, 1})
        expect_kernel_matches(op, {ties}, {{"axis", axis}, {"select_last_index", last}, {"keepdims", last}});
}

// Linear and cubic Resize over H and W only take the separable kernel (rows
// interpolated along W once, into a ring); one that also resizes channels takes the
// generic tap loops.
TEST(MathKernelsTest, SeparableResizeMatchesTheReference) {
  Tensor x = testing::random_f32({2, 3, 5, 7}, 12);
  Tolerance tol = Tolerance::relative(1e-5, 1e-6);
  for (const char* mode : {"linear", "cubic"})
    for (const char* transform : {"half_pixel", "align_corners", "asymmetric"})
      for (std::vector<int64_t> size : {std::vector<int64_t>{2, 3, 11, 16}, std::vector<int64_t>{2, 3, 3, 4},
                                        std::vector<int64_t>{2, 3, 5, 20}, std::vector<int64_t>{2, 4, 9, 7}}) {
        ops::Attrs attrs = {{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string(transform)}};
        expect_kernel_matches("Resize", {x, f32({0}, {}), f32({0}, {}), i64({4}, size)}, attrs, {false, true, true, true},
                              tol);
      }
}

TEST(MathKernelsTest, EpilogueFusionOfTheNewUnaryOps) {
  // Conv-free anchor: ReduceSum, then Sin and Mod (fmod) fused into its epilogue.
  Graph g;
  Value* x = testing::add_input(g, "x", {4, 8});
  Node* r = testing::add_op(g, "ReduceSum", {x}, {{"axes", std::vector<int64_t>{1}}});
  Node* s = testing::add_op(g, "Sin", {r->outputs[0]});
  Value* k = g.add_constant("k", f32({1}, {0.75f}));
  Node* m = testing::add_op(g, "Mod", {s->outputs[0], k}, {{"fmod", int64_t{1}}});
  g.outputs.push_back(m->outputs[0]);
  Tensor in = testing::random_f32({4, 8}, 10);
  Tensor want = testing::evaluate_graph(g, {in}).at(m->outputs[0]);
  passes::fuse_epilogues(g);
  EXPECT_EQ(g.nodes().size(), 1u);
  Tensor got = testing::compile_and_run(g, {in}).at(0);
  EXPECT_TRUE(testing::tensors_near(got, want, Tolerance::relative(1e-5, 1e-6)));
}

// ---- scalar math accuracy -------------------------------------------------------------

struct MathCase {
  const char* op;
  std::function<double(double)> want;
  float lo, hi;
  double rel;  // |got - want| <= rel * |want| + abs
  double abs;
};

TEST(MathKernelsTest, ScalarMathIsAccurateWithoutLibm) {
  const MathCase cases[] = {
      {"Sin", [](double v) { return std::sin(v); }, -100, 100, 2e-6, 2e-7},
      {"Cos", [](double v) { return std::cos(v); }, -100, 100, 2e-6, 2e-7},
      {"Tan", [](double v) { return std::tan(v); }, -1.5f, 1.5f, 4e-6, 2e-7},
      {"Asin", [](double v) { return std::asin(v); }, -1, 1, 2e-6, 1e-7},
      {"Acos", [](double v) { return std::acos(v); }, -1, 1, 2e-6, 1e-7},
      {"Atan", [](double v) { return std::atan(v); }, -50, 50, 2e-6, 1e-7},
      {"Sinh", [](double v) { return std::sinh(v); }, -20, 20, 2e-6, 1e-7},
      {"Cosh", [](double v) { return std::cosh(v); }, -20, 20, 2e-6, 1e-7},
      {"Asinh", [](double v) { return std::asinh(v); }, -100, 100, 2e-6, 1e-7},
      {"Acosh", [](double v) { return std::acosh(v); }, 1, 100, 2e-6, 1e-7},
      {"Atanh", [](double v) { return std::atanh(v); }, -0.999f, 0.999f, 2e-6, 1e-7},
      {"Log", [](double v) { return std::log(v); }, 1e-3f, 1e3f, 2e-6, 1e-7},
      {"Exp", [](double v) { return std::exp(v); }, -80, 80, 2e-6, 1e-30},
      {"Softplus", [](double v) { return std::log1p(std::exp(v)); }, -30, 30, 2e-6, 1e-12},
      {"Elu", [](double v) { return v < 0 ? std::expm1(v) : v; }, -5, 5, 2e-6, 1e-12},
      {"Floor", [](double v) { return std::floor(v); }, -1e4f, 1e4f, 0, 0},
      {"Ceil", [](double v) { return std::ceil(v); }, -1e4f, 1e4f, 0, 0},
      {"Erf", [](double v) { return std::erf(v); }, -4, 4, 2e-6, 1e-7},
  };
  const int64_t n = 4001;
  for (const MathCase& c : cases) {
    Tensor x(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = c.lo + (c.hi - c.lo) * static_cast<float>(i) / (n - 1);
    Tensor got = run_kernel(c.op, {x});
    double worst = 0;
    int64_t worst_i = 0;
    for (int64_t i = 0; i < n; ++i) {
      double want = c.want(x.data<float>()[i]);
      double err = std::fabs(got.data<float>()[i] - want) - (c.rel * std::fabs(want) + c.abs);
      if (err > worst) {
        worst = err;
        worst_i = i;
      }
    }
    EXPECT_LE(worst, 0.0) << c.op << " at x = " << x.data<float>()[worst_i] << ": got " << got.data<float>()[worst_i]
                          << ", want " << c.want(x.data<float>()[worst_i]);
  }
}

}  // namespace
}  // namespace ingot
