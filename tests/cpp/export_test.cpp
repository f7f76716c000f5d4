// export: primitive state round trips, files written and read back from C++, and the memory
// plan's order.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "mlx/export/export_detail.h"
#include "mlx/export/memory_plan.h"
#include "mlx/export/validate.h"
#include "mlx/mlx.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/transform.h"
#include "mlx/primitives/with_kernels.h"
#include "test_utils.h"

namespace mlx::core::test {
namespace {

std::string temp_path(const char* name) { return std::string(::testing::TempDir()) + name; }

// Whether import's check of a step accepts these inputs and recorded outputs.
bool ok(Primitive& p, const std::vector<array>& in, const std::vector<Shape>& shapes,
        const std::vector<Dtype>& dtypes) {
  try {
    detail::check_step(p, in, shapes, dtypes,
                       [](const std::string& why) { throw std::runtime_error(why); });
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

TEST(Export, PrimitiveStateRoundTrips) {
  Stream s = default_stream(Device(Device::cpu));
  Reduce original(s, Reduce::Prod, {0, 2});
  serial::StateWriter w;
  original.write_state(w);
  serial::StateReader r(w.bytes(), "test");
  std::string name = r.str();
  EXPECT_EQ(name, "Reduce");
  auto factory = serial::find_factory(name);
  ASSERT_NE(factory, nullptr);
  auto rebuilt = factory(s, r);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(rebuilt->is_equivalent(original));
  EXPECT_FALSE(rebuilt->is_equivalent(Reduce(s, Reduce::Sum, {0, 2})));
}

// A field added last (MLX_TRAILING) is left out while it holds its default: files written
// before it existed read as the default, and primitives that do not use it are written as
// before.
TEST(Export, TrailingFieldsKeepOlderFilesReadable) {
  Stream s = default_stream(Device(Device::cpu));
  auto round_trip = [&](const Primitive& p, size_t expected_bytes) {
    serial::StateWriter w;
    p.write_state(w);
    serial::StateReader r(w.bytes(), "test");
    auto factory = serial::find_factory(r.str());
    EXPECT_EQ(r.remaining(), expected_bytes);
    auto rebuilt = factory(s, r);
    EXPECT_EQ(r.remaining(), 0u);
    EXPECT_TRUE(rebuilt->is_equivalent(p));
    return rebuilt;
  };
  auto plain = round_trip(Matmul(s), 0);
  EXPECT_FALSE(static_cast<Matmul&>(*plain).float32_out());
  auto wide = round_trip(Matmul(s, true), 1);
  EXPECT_TRUE(static_cast<Matmul&>(*wide).float32_out());
  EXPECT_FALSE(wide->is_equivalent(Matmul(s)));
  round_trip(MatmulColumnSums(s), 0);
  auto sums = round_trip(MatmulColumnSums(s, 2), 8);
  EXPECT_EQ(static_cast<MatmulColumnSums&>(*sums).float32_outputs(), 2);
}

TEST(Export, AttentionLseFlagsAreTrailingFields) {
  // Fused attention's forward with lse and backward reading it: one more byte each; files
  // without them read as before.
  Stream s = default_stream(Device(Device::cpu));
  auto bytes = [](const Primitive& p) {
    serial::StateWriter w;
    p.write_state(w);
    return w.bytes();
  };
  fast::ScaledDotProductAttention plain(s, 0.5f, true, false, true),
      lse(s, 0.5f, true, false, true, true);
  fast::ScaledDotProductAttentionVJP back(s, 0.5f, true, false, true),
      back_lse(s, 0.5f, true, false, true, true);
  for (auto [p, q] : {std::pair<const Primitive*, const Primitive*>{&plain, &lse},
                      std::pair<const Primitive*, const Primitive*>{&back, &back_lse}}) {
    std::string a = bytes(*p), b = bytes(*q);
    EXPECT_EQ(b.size(), a.size() + 1);
    EXPECT_EQ(b.substr(0, a.size()), a);
    for (const std::string* state : {&a, &b}) {
      serial::StateReader r(*state, "test");
      auto rebuilt = serial::find_factory(r.str())(s, r);
      EXPECT_EQ(r.remaining(), 0u);
      EXPECT_TRUE(rebuilt->is_equivalent(state == &a ? *p : *q));
      EXPECT_FALSE(rebuilt->is_equivalent(state == &a ? *q : *p));
    }
  }
}

TEST(Export, ImportChecksAttentionLse) {
  // The forward's lse is float32 (B, N, Tq) and the backward's last input where flagged.
  Stream s = default_stream(Device(Device::cpu));
  auto shaped = [](Shape shape, Dtype dt = float16) { return array(shape, dt, nullptr, {}); };
  std::vector<array> qkv = {shaped({1, 4, 5, 64}), shaped({1, 2, 7, 64}), shaped({1, 2, 7, 64})};
  Shape out = {1, 4, 5, 64}, rows = {1, 4, 5};
  fast::ScaledDotProductAttention plain(s, 0.5f, true, false, false),
      lse(s, 0.5f, true, false, false, true);
  EXPECT_TRUE(ok(plain, qkv, {out}, {float16}));
  EXPECT_FALSE(ok(plain, qkv, {out}, {float32}));
  EXPECT_FALSE(ok(plain, qkv, {out, rows}, {float16, float32}));
  EXPECT_TRUE(ok(lse, qkv, {out, rows}, {float16, float32}));
  EXPECT_FALSE(ok(lse, qkv, {out}, {float16}));
  EXPECT_FALSE(ok(lse, qkv, {out, rows}, {float16, float16}));
  EXPECT_FALSE(ok(lse, qkv, {out, {1, 4, 6}}, {float16, float32}));
  fast::ScaledDotProductAttentionVJP back(s, 0.5f, true, false, false),
      back_lse(s, 0.5f, true, false, false, true);
  std::vector<array> in = qkv;
  in.push_back(shaped(out));
  in.push_back(shaped(out));
  std::vector<Shape> grads = {qkv[0].shape(), qkv[1].shape(), qkv[2].shape()};
  std::vector<Dtype> halves(3, float16);
  EXPECT_TRUE(ok(back, in, grads, halves));
  EXPECT_FALSE(ok(back_lse, in, grads, halves));
  in.push_back(shaped(rows, float32));
  EXPECT_TRUE(ok(back_lse, in, grads, halves));
  EXPECT_FALSE(ok(back, in, grads, halves));
  EXPECT_FALSE(ok(back_lse, in, grads, {float16, float16, float32}));
  in.back() = shaped(rows, float16);
  EXPECT_FALSE(ok(back_lse, in, grads, halves));
  in.back() = shaped({1, 4, 7}, float32);
  EXPECT_FALSE(ok(back_lse, in, grads, halves));
}

TEST(Export, AttentionGradientsWithLseRoundTrip) {
  // A training step traced with the forward's lse (forced on the CPU here, as on the GPU by
  // default): the two-output forward and the backward that reads lse go through the file.
  auto previous = fast::detail::attention_lse();
  fast::detail::set_attention_lse(fast::detail::AttentionLse::always);
  ExportFn fun = [](const Args& args, const Kwargs&) {
    auto f = [](const std::vector<array>& x) {
      return std::vector<array>{fast::scaled_dot_product_attention(
          x[0], x[1], x[2], 0.35f, "causal", {}, {}, Device(Device::cpu))};
    };
    auto [outs, grads] = vjp(f, {args[0], args[1], args[2]}, {args[3]});
    grads.insert(grads.begin(), outs[0]);
    return grads;
  };
  std::vector<array> args = {
      random_array({2, 4, 6, 8}, float32, -1, 1, 1), random_array({2, 2, 9, 8}, float32, -1, 1, 2),
      random_array({2, 2, 9, 5}, float32, -1, 1, 3), random_array({2, 4, 6, 5}, float32, -1, 1, 4)};
  std::string path = temp_path("cpp_export_attention_lse.mlxfn");
  export_function(path, fun, args);
  fast::detail::set_attention_lse(previous);
  // The file holds the flagged steps.
  auto file = detail::read_export_file(path);
  int forwards = 0, backwards = 0;
  for (const auto& step : file->traces.at(0).program.steps) {
    if (auto* p = dynamic_cast<fast::ScaledDotProductAttention*>(step.primitive.get())) {
      forwards += p->output_lse() && step.shapes.size() == 2;
    } else if (auto* p = dynamic_cast<fast::ScaledDotProductAttentionVJP*>(step.primitive.get())) {
      backwards += p->has_lse() && step.inputs.size() == 6;
    }
  }
  EXPECT_EQ(forwards, 1);
  EXPECT_EQ(backwards, 1);
  auto imported = import_function(path);
  auto expected = fun(args, {});
  auto got = imported(args);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    expect_close(got[i], to_vector(expected[i]), expected[i].shape(), 1e-5, 1e-6);
  }
  std::remove(path.c_str());
}

TEST(Export, Float32ProductsOfHalfOperandsRoundTrip) {
  // A mixed-precision weight gradient (a bfloat16 product stored in float32) survives export
  // and import, which checks the output dtype against the primitive's flag.
  array x = astype(random_array({4, 3}), bfloat16);
  ExportFn fun = [x](const Args& args, const Kwargs&) {
    auto f = [x](const std::vector<array>& w) {
      return std::vector<array>{matmul(x, transpose(astype(w[0], bfloat16)))};
    };
    return vjp(f, {args[0]}, {astype(args[1], bfloat16)}).second;
  };
  array w = random_array({2, 3}, float32, -1, 1, 5);
  array g = random_array({4, 2}, float32, -1, 1, 6);
  std::string path = temp_path("cpp_export_f32_product.mlxfn");
  export_function(path, fun, {w, g});
  auto imported = import_function(path);
  auto expected = fun({w, g}, {});
  auto got = imported({w, g});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].dtype(), float32);
  expect_close(got[0], to_vector(expected[0]), expected[0].shape(), 0, 0);
  std::remove(path.c_str());
}

TEST(Export, ImportChecksFloat32ProductFlags) {
  // An imported product's output dtypes must match its float32 flags, which only 16-bit
  // operands may carry.
  Stream s = default_stream(Device(Device::cpu));
  auto operands = [](Dtype dt) {
    return std::vector<array>{array({2, 3}, dt, nullptr, {}), array({3, 4}, dt, nullptr, {})};
  };
  Matmul plain(s), wide(s, true);
  EXPECT_TRUE(ok(wide, operands(bfloat16), {{2, 4}}, {float32}));
  EXPECT_TRUE(ok(wide, operands(float16), {{2, 4}}, {float32}));
  EXPECT_FALSE(ok(wide, operands(bfloat16), {{2, 4}}, {bfloat16}));
  EXPECT_FALSE(ok(wide, operands(float32), {{2, 4}}, {float32}));
  EXPECT_FALSE(ok(plain, operands(bfloat16), {{2, 4}}, {float32}));
  EXPECT_TRUE(ok(plain, operands(bfloat16), {{2, 4}}, {bfloat16}));
  MatmulColumnSums sums(s, 2), bad(s, 4);
  std::vector<Shape> shapes{{2, 4}, {1, 4}};
  EXPECT_TRUE(ok(sums, operands(bfloat16), shapes, {bfloat16, float32}));
  EXPECT_FALSE(ok(sums, operands(bfloat16), shapes, {float32, float32}));
  EXPECT_FALSE(ok(sums, operands(float32), shapes, {float32, float32}));
  EXPECT_FALSE(ok(bad, operands(bfloat16), shapes, {bfloat16, bfloat16}));
}

template <class P>
constexpr bool kSerializable = requires {
  P::kSerialName;
};

// Every primitive an op can put in a graph can be written to a file. Not exported: the
// collectives (a group is process state, not a parameter), Compiled (export traces compiled
// functions unfused), CustomTransforms (inlined) and Load (constants are written as data).
TEST(Export, EveryPrimitiveIsSerializable) {
  std::vector<std::string> missing;
  // Compile's fused steps (Compiled and the FusedMatmul ones) are never exported: export traces
  // compiled functions' unfused programs.
  const std::set<std::string> unexported = {"Compiled", "MatmulGeluApprox", "MatmulGeluApproxVjp",
                                            "fast::CustomKernel"};
#define MLX_CHECK_SERIALIZABLE(P)                                            \
  if (!kSerializable<P> && std::string(#P).rfind("distributed::", 0) != 0 && \
      !unexported.count(#P)) {                                               \
    missing.push_back(#P);                                                   \
  }
  MLX_PRIMITIVES_WITH_KERNELS(MLX_CHECK_SERIALIZABLE)
  MLX_CHECK_SERIALIZABLE(Broadcast)
  MLX_CHECK_SERIALIZABLE(Transpose)
  MLX_CHECK_SERIALIZABLE(Slice)
  MLX_CHECK_SERIALIZABLE(AsStrided)
  MLX_CHECK_SERIALIZABLE(Diagonal)
  MLX_CHECK_SERIALIZABLE(StopGradient)
  MLX_CHECK_SERIALIZABLE(Depends)
  MLX_CHECK_SERIALIZABLE(DynamicBroadcast)
  MLX_CHECK_SERIALIZABLE(DynamicUnbroadcast)
  MLX_CHECK_SERIALIZABLE(NumberOfElements)
  MLX_CHECK_SERIALIZABLE(SqueezeAxes)
  MLX_CHECK_SERIALIZABLE(ExpandAxes)
#undef MLX_CHECK_SERIALIZABLE
  EXPECT_TRUE(missing.empty()) << "no MLX_SERIALIZABLE: " << ::testing::PrintToString(missing);
}

TEST(Export, StateReaderRejectsBadBytes) {
  Stream s = default_stream(Device(Device::cpu));
  serial::StateWriter w;
  Unary(s, UnaryOp::Exp).write_state(w);
  std::string bytes = w.bytes();
  serial::StateReader name_reader(bytes, "t");
  name_reader.str();
  auto factory = serial::find_factory("Unary");
  ASSERT_NE(factory, nullptr);
  // Truncated parameters.
  std::string cut = bytes.substr(0, bytes.size() - 1);
  serial::StateReader r1(cut, "t");
  r1.str();
  EXPECT_THROW(factory(s, r1), std::runtime_error);
  // An enum value past the last operation.
  std::string bad = bytes;
  bad[bad.size() - 8] = static_cast<char>(200);
  serial::StateReader r2(bad, "t");
  r2.str();
  EXPECT_THROW(factory(s, r2), std::runtime_error);
  EXPECT_EQ(serial::find_factory("NoSuchPrimitive"), nullptr);
}

TEST(Export, FunctionsRoundTripThroughFiles) {
  array w = random_array({3, 4});
  ExportFn fun = [w](const Args& args, const Kwargs& kwargs) {
    array y = add(matmul(args[0], w), kwargs.at("b"));
    return std::vector<array>{sum(exp(y), -1), y};
  };
  array x = random_array({2, 3}, float32, -1, 1, 2);
  array b = random_array({4}, float32, -1, 1, 3);
  std::string path = temp_path("cpp_export.mlxfn");
  export_function(path, fun, {x}, {{"b", b}}, {.metadata = "m"});
  auto imported = import_function(path);
  EXPECT_EQ(imported.metadata(), "m");
  auto expected = fun({x}, {{"b", b}});
  auto got = imported({x}, {{"b", b}});
  ASSERT_EQ(got.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    expect_close(got[k], to_vector(expected[k]), expected[k].shape());
  }
  EXPECT_THROW(imported({x}), std::invalid_argument);
  std::remove(path.c_str());
}

TEST(Export, UnserializablePrimitivesAreClearErrors) {
  // A custom function's node is inlined; a primitive without state cannot be exported.
  struct Opaque : UnaryPrimitive {
    using UnaryPrimitive::UnaryPrimitive;
    void eval_cpu(const std::vector<array>&, array&) override {}
    void eval_gpu(const std::vector<array>&, array&) override {}
    const char* name() const override { return "Opaque"; }
  };
  ExportFn fun = [](const Args& args, const Kwargs&) {
    return std::vector<array>{array(args[0].shape(), args[0].dtype(),
                                    std::make_shared<Opaque>(default_stream(default_device())),
                                    {args[0]})};
  };
  std::string path = temp_path("cpp_opaque.mlxfn");
  try {
    export_function(path, fun, {array({1.0f, 2.0f})});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Opaque cannot be exported"), std::string::npos);
  }
}

TEST(Export, MemoryPlanComputesTheWideBranchFirst) {
  // out = big(x) * reduce(wide(x)): eval's order keeps big(x) alive during wide(x).
  ExportFn fun = [](const Args& args, const Kwargs&) {
    array x = args[0];
    array big = exp(x);
    array wide = sin(concatenate({x, x, x, x}, 1));
    array small = sum(wide, 1, true);
    return std::vector<array>{multiply(big, small)};
  };
  auto t = detail::trace_program(fun, {zeros({64, 64})}, {}, false);
  auto naive = detail::eval_order(t.program);
  auto planned = detail::plan_memory_order(t.program);
  ASSERT_EQ(naive.size(), planned.size());
  EXPECT_LT(detail::planned_peak_bytes(t.program, planned),
            detail::planned_peak_bytes(t.program, naive));
}

}  // namespace
}  // namespace mlx::core::test
