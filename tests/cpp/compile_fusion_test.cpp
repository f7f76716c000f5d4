// compile's fusion pass and the Compiled primitive's CPU kernel.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "mlx/backend/common/jit_cache.h"
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

// JitCaches made by a test keep their kernels in a fresh directory (MLX_KERNEL_CACHE).
class JitCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("MLX_COMPILE_JIT")) {
      GTEST_SKIP() << "MLX_COMPILE_JIT changes when kernels build";
    }
    char dir[] = "/tmp/mlx_jit_cache_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    if (const char* saved = std::getenv("MLX_KERNEL_CACHE")) {
      saved_ = saved;
    }
    setenv("MLX_KERNEL_CACHE", dir, 1);
  }
  void TearDown() override {
    if (saved_) {
      setenv("MLX_KERNEL_CACHE", saved_->c_str(), 1);
    } else {
      unsetenv("MLX_KERNEL_CACHE");
    }
  }

 private:
  std::optional<std::string> saved_;
};

// The kernel builder with a stand-in compiler (cp) and loader: when it builds, what it keeps on
// disk, and that a second cache over the same directory loads instead of building.
TEST_F(JitCacheTest, BuildsAtTheConfiguredUseAndLoadsFromDiskFirst) {
  static int loaded;  // what the stand-in loader hands out
  JitCache::Toolchain t{"test",
                        "// prelude\n",
                        ".out",
                        JitCache::command_build(".txt",
                                                [](const std::string& src, const std::string& out) {
                                                  return "cp " + src + " " + out;
                                                }),
                        [](const std::string&, const std::string&) -> void* { return &loaded; },
                        true,
                        2};
  // Leaked, as the real caches: the registry of caches keeps them for the statistics.
  auto* first = new JitCache(t);
  int sources = 0;
  auto make = [&](const std::string& name) -> std::optional<std::string> {
    ++sources;
    return "kernel " + name + "\n";
  };
  EXPECT_EQ(first->lookup("region", make), nullptr);  // first use: nothing built
  first->wait();
  EXPECT_EQ(first->stats().built, 0);
  first->lookup("region", make);  // the second starts the build
  first->wait();
  EXPECT_EQ(first->stats().built, 1);
  EXPECT_EQ(first->lookup("region", make), &loaded);
  EXPECT_EQ(sources, 1);  // the source is made once per key
  EXPECT_EQ(first->stats().failed, 0);
  auto* second = new JitCache(t);
  EXPECT_EQ(second->lookup("region", make), &loaded);  // from disk, at the first use
  EXPECT_EQ(second->stats().from_disk, 1);
  EXPECT_EQ(second->stats().built, 0);
  // No source: no kernel, and nothing is built for it.
  EXPECT_EQ(first->lookup("other", [](const std::string&) { return std::optional<std::string>(); }),
            nullptr);
}

// A build that fails (an in-process toolchain returning its log, as NVRTC's does) is counted,
// never retried, and leaves the region to the other way (a null kernel).
TEST_F(JitCacheTest, AFailedBuildIsCountedAndNotRetried) {
  static int builds;
  JitCache::Toolchain t{"test",
                        "",
                        ".out",
                        [](const std::string&, const std::string&) -> std::optional<std::string> {
                          ++builds;
                          return "error: stand-in\n";
                        },
                        [](const std::string&, const std::string&) -> void* { return nullptr; },
                        true,
                        1};
  auto* cache = new JitCache(t);  // leaked, as above
  auto make = [](const std::string& name) -> std::optional<std::string> { return name + "\n"; };
  EXPECT_EQ(cache->lookup("region", make), nullptr);  // the first use starts the build
  cache->wait();
  EXPECT_EQ(cache->stats().failed, 1);
  EXPECT_EQ(cache->lookup("region", make), nullptr);
  cache->wait();
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(cache->stats().built, 0);
  EXPECT_EQ(cache->stats().interpreted, 2);
}

}  // namespace
}  // namespace mlx::core::test
