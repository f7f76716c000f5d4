// compile: capture, cache per signature, simplification, shapeless replay, state, errors.
#include <gtest/gtest.h>

#include "mlx/mlx.h"
#include "mlx/transforms/compile_program.h"
#include "test_utils.h"

namespace mlx::core::test {
namespace {

std::vector<array> chain(const std::vector<array>& in) {
  array x = in[0];
  array y = in[1];
  array z = add(multiply(exp(x), y), sin(x));
  return {sum(z, -1), maximum(z, array(0.5f))};
}

TEST(Compile, MatchesTheUncompiledFunction) {
  auto compiled = compile(chain);
  for (int n : {3, 5}) {
    array x = random_array({2, n});
    array y = random_array({n}, float32, -1, 1, 4);
    auto expected = chain({x, y});
    auto got = compiled({x, y});
    ASSERT_EQ(got.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      expect_close(got[k], to_vector(expected[k]), expected[k].shape());
    }
  }
}

TEST(Compile, TracesOncePerSignature) {
  int traces = 0;
  auto compiled = compile([&traces](const std::vector<array>& in) {
    ++traces;
    return std::vector<array>{multiply(in[0], in[0])};
  });
  compiled({zeros({2, 3})});
  compiled({ones({2, 3})});
  EXPECT_EQ(traces, 1);
  compiled({zeros({3, 3})});
  EXPECT_EQ(traces, 2);
  compiled({zeros({2, 3}, float64)});
  EXPECT_EQ(traces, 3);
  auto out = compiled({full({2, 3}, 3.0f)});
  EXPECT_EQ(traces, 3);
  expect_close(out[0], std::vector<double>(6, 9.0), {2, 3});
}

TEST(Compile, ShapelessReusesTheTraceAcrossShapes) {
  int traces = 0;
  auto f = [&traces](const std::vector<array>& in) {
    ++traces;
    array centered = subtract(in[0], mean(in[0], -1, true));
    return std::vector<array>{add(multiply(centered, in[1]), array(1.0f)),
                              var(in[0], -1, false, 1)};
  };
  auto compiled = compile(f, /*shapeless=*/true);
  for (auto [m, n] : {std::pair{2, 3}, std::pair{4, 5}, std::pair{1, 7}}) {
    array x = random_array({m, n}, float32, -1, 1, m);
    array w = random_array({n}, float32, -1, 1, n);
    auto got = compiled({x, w});
    int before = traces;
    auto expected = f({x, w});
    traces = before;
    for (int k = 0; k < 2; ++k) {
      expect_close(got[k], to_vector(expected[k]), expected[k].shape());
    }
  }
  EXPECT_EQ(traces, 1);
  // A new rank or dtype is a new signature.
  compiled({random_array({2, 2, 3}), random_array({3})});
  EXPECT_EQ(traces, 2);
}

TEST(Compile, ShapelessReshapeFollowsInputsOrFailsClearly) {
  // The -1 dimension is inferred again for new inputs, kept leading dimensions follow them.
  auto f = [](const std::vector<array>& in) { return std::vector<array>{reshape(in[0], {-1, 2})}; };
  auto cf = compile(f, true);
  EXPECT_EQ(cf({zeros({2, 4})})[0].shape(), (Shape{4, 2}));
  EXPECT_EQ(cf({zeros({3, 4})})[0].shape(), (Shape{6, 2}));
  auto g = [](const std::vector<array>& in) {
    return std::vector<array>{reshape(in[0], {in[0].shape(0), 2, -1})};
  };
  auto cg = compile(g, true);
  EXPECT_EQ(cg({zeros({2, 4})})[0].shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(cg({zeros({5, 6})})[0].shape(), (Shape{5, 2, 3}));
  // Two new dimensions from one: nothing says how the new input splits.
  auto h = [](const std::vector<array>& in) {
    return std::vector<array>{reshape(in[0], {2, 3, 4})};
  };
  auto ch = compile(h, true);
  EXPECT_EQ(ch({zeros({6, 4})})[0].shape(), (Shape{2, 3, 4}));
  EXPECT_THROW(ch({zeros({8, 4})}), std::invalid_argument);
}

TEST(Compile, ShapelessReductionsOverAxesOfSizeOneInTheFirstTrace) {
  // Traced with (2, 1), the sums must still reduce axis 1 of a (2, 3) input, and the
  // gradient of a broadcast traced without broadcasting must sum over it on replay.
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{sum(in[0], 1), max(exp(in[0]), std::vector<int>{1}, true)};
  };
  auto cf = compile(f, true);
  auto grads = [](const std::vector<array>& in) {
    auto loss = [](const std::vector<array>& a) {
      return std::vector<array>{sum(square(add(a[0], a[1])))};
    };
    return vjp(loss, in, {array(1.0f)}).second;
  };
  auto compiled_grads = compile(grads, true);
  for (int n : {1, 3}) {
    array x = random_array({2, n}, float32, -1, 1, n);
    auto got = cf({x});
    auto want = f({x});
    for (int k = 0; k < 2; ++k) {
      expect_close(got[k], to_vector(want[k]), want[k].shape());
    }
  }
  // A bias traced against a batch of one row (nothing broadcast), then a batch of four.
  for (int batch : {1, 4}) {
    std::vector<array> in{random_array({batch, 3}, float32, -1, 1, batch),
                          random_array({1, 3}, float32, -1, 1, 7)};
    auto got = compiled_grads(in);
    auto want = grads(in);
    for (int k = 0; k < 2; ++k) {
      expect_close(got[k], to_vector(want[k]), want[k].shape());
    }
  }
}

TEST(Compile, CapturesStateInputsAndOutputs) {
  array total = zeros({3});
  int traces = 0;
  auto accumulate = [&](const std::vector<array>& in) {
    ++traces;
    total = add(total, in[0]);
    return std::vector<array>{multiply(total, array(2.0f))};
  };
  auto compiled =
      compile(accumulate, CompileOptions{.state_inputs = {&total}, .state_outputs = {&total}});
  for (int step = 1; step <= 3; ++step) {
    auto out = compiled({ones({3})});
    expect_close(total, std::vector<double>(3, step), {3});
    expect_close(out[0], std::vector<double>(3, 2.0 * step), {3});
  }
  EXPECT_EQ(traces, 1);
}

TEST(Compile, ReadingATracedValueIsAClearError) {
  auto f = [](const std::vector<array>& in) {
    float v = sum(in[0]).item<float>();
    return std::vector<array>{multiply(in[0], array(v))};
  };
  try {
    compile(f)({ones({2})});
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("compile"), std::string::npos) << e.what();
  }
}

TEST(Compile, DisableRunsTheFunctionDirectly) {
  int calls = 0;
  auto compiled = compile([&calls](const std::vector<array>& in) {
    ++calls;
    return std::vector<array>{negative(in[0])};
  });
  compiled({ones({2})});
  compiled({ones({2})});
  EXPECT_EQ(calls, 1);
  disable_compile();
  EXPECT_FALSE(compile_enabled());
  auto out = compiled({ones({2})});
  enable_compile();
  EXPECT_EQ(calls, 2);
  expect_close(out[0], {-1, -1});
}

// Inspects the captured program of `f` at `inputs`.
detail::Program program_of(const ArrayFn& f, const std::vector<array>& inputs) {
  detail::TracingScope scope;
  std::vector<array> placeholders;
  for (auto& in : inputs) {
    placeholders.emplace_back(in.shape(), in.dtype(), nullptr, std::vector<array>{});
    placeholders.back().set_tracer(true);
  }
  return detail::build_program(placeholders, f(placeholders), false);
}

TEST(Compile, MergesCommonSubexpressions) {
  auto p = program_of(
      [](const std::vector<array>& in) {
        return std::vector<array>{add(exp(in[0]), exp(in[0])), multiply(exp(in[0]), in[0])};
      },
      {zeros({4})});
  EXPECT_EQ(p.steps.size(), 3u);  // one Exp, Add, Multiply
}

TEST(Compile, RemovesNoOpSteps) {
  auto p = program_of(
      [](const std::vector<array>& in) {
        array x = transpose(in[0], {0, 1});
        x = copy(copy(x));
        x = reshape(x, {2, 3});
        return std::vector<array>{exp(x)};
      },
      {zeros({2, 3})});
  ASSERT_EQ(p.steps.size(), 2u);  // one Copy, Exp
  EXPECT_STREQ(p.steps[0].primitive->name(), "Copy");
}

TEST(Compile, FoldsScalarConstants) {
  auto p = program_of(
      [](const std::vector<array>& in) { return std::vector<array>{add(in[0], exp(array(1.0f)))}; },
      {zeros({4})});
  EXPECT_EQ(p.steps.size(), 1u);
  bool folded = false;
  for (auto& [index, c] : p.constants) {
    folded = folded || c.status() == array::Status::available;
  }
  EXPECT_TRUE(folded);
}

}  // namespace
}  // namespace mlx::core::test
