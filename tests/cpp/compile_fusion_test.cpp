// compile's fusion pass and the Compiled primitive's CPU kernel.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "mlx/primitives/compiled.h"
#include "mlx/transforms/compile_program.h"
#include "mlx/transforms/fuse.h"
#include "test_utils.h"

namespace mlx::core::test {
namespace {

std::vector<std::string> step_names(const detail::Program& p) {
  std::vector<std::string> names;
  for (auto& s : p.steps) {
    names.push_back(s.primitive->name());
  }
  return names;
}

detail::Program fused_program(const ArrayFn& f, const std::vector<array>& inputs) {
  detail::TracingScope scope;
  std::vector<array> placeholders;
  for (auto& in : inputs) {
    placeholders.emplace_back(in.shape(), in.dtype(), nullptr, std::vector<array>{});
    placeholders.back().set_tracer(true);
  }
  auto outs = f(placeholders);
  return detail::fuse_elementwise(detail::build_program(placeholders, outs, false), false);
}

// These check the host's regions (reduction epilogues attach there only) and its kernels, so
// they run on the host whatever the default device.
class CompileFusion : public ::testing::Test {
 protected:
  void SetUp() override { set_default_device(Device::cpu); }
  void TearDown() override { set_default_device(saved_); }

 private:
  Device saved_ = default_device();
};

TEST_F(CompileFusion, AChainBecomesOneStepAndItsBroadcastViewsDisappear) {
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{multiply(add(exp(in[0]), in[1]), array(2.0f))};
  };
  auto p = fused_program(f, {zeros({4, 3}), zeros({3})});
  EXPECT_EQ(step_names(p), std::vector<std::string>{"Compiled"});
  auto& c = static_cast<Compiled&>(*p.steps[0].primitive);
  EXPECT_EQ(c.ops().size(), 3u);
  EXPECT_EQ(c.num_inputs(), 3);  // x, y (3,) un-broadcast, the constant 2
}

TEST_F(CompileFusion, AJoinThatWouldCycleStartsANewRegion) {
  // c reads a (region R) and a matmul of R's output: c cannot join R.
  auto f = [](const std::vector<array>& in) {
    array a = add(exp(in[0]), array(1.0f));
    array b = matmul(a, a);
    return std::vector<array>{subtract(multiply(a, b), array(1.0f))};
  };
  auto p = fused_program(f, {zeros({3, 3})});
  EXPECT_EQ(step_names(p), (std::vector<std::string>{"Compiled", "Matmul", "Compiled"}));
  array x = random_array({3, 3});
  auto expected = f({x});
  auto got = compile(f)({x});
  expect_close(got[0], to_vector(expected[0]), {3, 3});
}

TEST_F(CompileFusion, KernelReadsBroadcastStridedAndScalarInputs) {
  // v3 = v0 * v1; v4 = v3 + v2; outputs v4 and v3.
  std::vector<FusedOp> ops = {
      {FusedOp::Kind::binary, static_cast<int>(BinaryOp::Multiply), float32, {0, 1, -1}},
      {FusedOp::Kind::binary, static_cast<int>(BinaryOp::Add), float32, {3, 2, -1}}};
  auto prim = std::make_shared<Compiled>(default_stream(Device::cpu),
                                         std::vector<Dtype>{float32, float32, float32}, ops,
                                         std::vector<int>{4, 3});
  array a = transpose(random_array({5, 4}));  // (4, 5), strided
  array b = random_array({5});                // broadcast along rows
  array s = array(0.5f);                      // scalar
  auto outs = array::make_arrays({{4, 5}, {4, 5}}, {float32, float32}, prim, {a, b, s});
  eval(outs);
  auto va = to_vector(a), vb = to_vector(b);
  std::vector<double> prod(20), sum(20);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      prod[i * 5 + j] = va[i * 5 + j] * vb[j];
      sum[i * 5 + j] = prod[i * 5 + j] + 0.5;
    }
  }
  expect_close(outs[0], sum, {4, 5});
  expect_close(outs[1], prod, {4, 5});
}

TEST_F(CompileFusion, ConstructorRejectsOpsReadingLaterValues) {
  std::vector<FusedOp> ops = {
      {FusedOp::Kind::unary, static_cast<int>(UnaryOp::Exp), float32, {2, -1, -1}}};
  EXPECT_THROW(Compiled(default_stream(Device::cpu), {float32}, ops, {1}), std::invalid_argument);
  EXPECT_THROW(Compiled(default_stream(Device::cpu), {float32}, {}, {0}), std::invalid_argument);
}

}  // namespace
}  // namespace mlx::core::test
