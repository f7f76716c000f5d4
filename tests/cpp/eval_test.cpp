#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "mlx/mlx.h"
#include "mlx/primitives/primitive.h"
#include "test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;

TEST(Eval, LazyUntilEvaluated) {
  array a = array({1.0f, 2.0f}) + array(1.0f);
  EXPECT_TRUE(a.has_primitive());
  EXPECT_EQ(a.status(), array::Status::unscheduled);
  eval(a);
  EXPECT_EQ(a.status(), array::Status::available);
  EXPECT_FALSE(a.has_primitive());  // evaluated nodes drop their graph
  EXPECT_TRUE(a.inputs().empty());
}

TEST(Eval, MillionOpChain) {
  array x = array(0.0f);
  for (int i = 0; i < 1000000; ++i) {
    x = x + array(1.0f);
  }
  eval(x);
  EXPECT_EQ(x.item<float>(), 1000000.0f);
}

TEST(Eval, SharedSubgraphEvaluatedOnce) {
  array a = exp(array({0.0f, 1.0f}));
  array b = a + a;
  array c = a * array(3.0f);
  eval(b, c);
  expect_close(b, {2.0, 2 * std::exp(1.0)});
  expect_close(c, {3.0, 3 * std::exp(1.0)});
}

TEST(Eval, AsyncEvalAndStreams) {
  Stream s1 = new_stream(Device::cpu);
  Stream s2 = new_stream(Device::cpu);
  EXPECT_NE(s1, s2);
  array a = ones({256, 256}, float32, s1);
  for (int i = 0; i < 50; ++i) {
    a = add(a, array(1.0f), s1);
  }
  // Cross-stream dependency: b on s2 consumes a from s1.
  array b = multiply(a, array(2.0f), s2);
  async_eval(b);
  synchronize(s2);
  EXPECT_TRUE(b.is_available());
  expect_close(slice(b, {0, 0}, {1, 2}), {102.0, 102.0});
  synchronize();
}

TEST(Eval, DefaultStreamPerThread) {
  const Device device = default_device();
  Stream main_default = default_stream(device);
  Stream other = new_stream(device);
  std::thread t([&] {
    set_default_stream(other);
    EXPECT_EQ(default_stream(device), other);
    array x = array(1.0f) + array(2.0f);
    EXPECT_EQ(x.primitive().stream(), other);
    EXPECT_EQ(x.item<float>(), 3.0f);
  });
  t.join();
  EXPECT_EQ(default_stream(device), main_default);
  if (is_available(Device::gpu)) {
    EXPECT_NO_THROW(set_default_device(Device::gpu));
    set_default_device(device);
  } else {
    EXPECT_EQ(default_device(), Device(Device::cpu));
    EXPECT_THROW(set_default_device(Device::gpu), std::invalid_argument);
  }
}

TEST(Eval, ConcurrentThreads) {
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      array x = full({1000}, static_cast<float>(t));
      for (int i = 0; i < 100; ++i) {
        x = x + array(1.0f);
      }
      eval(x);
      if (x.data<float>()[999] == t + 100.0f)
        ok++;
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(ok.load(), 4);
}

TEST(Eval, KernelErrorsPropagate) {
  array in = array({1.0f});
  array bad({1}, float32, std::make_shared<Failing>(default_stream(Device::cpu)), {in});
  array after = bad + array(1.0f);
  EXPECT_THROW(eval(after), std::runtime_error);
  EXPECT_EQ(after.status(), array::Status::failed);

  Stream s = new_stream(Device::cpu);
  array bad2({1}, float32, std::make_shared<Failing>(s), {in});
  array after2 = add(bad2, array(1.0f), s);
  async_eval(after2);
  EXPECT_THROW(eval(after2), std::runtime_error);
  // The stream keeps working afterwards.
  array fine = add(in, array(1.0f), s);
  EXPECT_EQ(fine.item<float>(), 2.0f);
}

TEST(Eval, InflightWorkIsBounded) {
  // Far more async evals than the in-flight bound: must neither deadlock nor lose work.
  Stream s = new_stream(Device::cpu);
  array x = array(0.0f);
  for (int i = 0; i < 3 * static_cast<int>(4096); ++i) {
    x = add(x, array(1.0f), s);
    async_eval(x);
  }
  EXPECT_EQ(x.item<float>(), 3.0f * 4096);
}
