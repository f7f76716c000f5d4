// Several threads evaluating overlapping lazy graphs at once ("One graph, several threads" in
// docs/ARCHITECTURE.md): each shared node runs once, waits never form a cycle, errors reach
// every evaluation that needed the failed node, and the streams keep working.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "mlx/fast.h"
#include "mlx/mlx.h"
#include "mlx/primitives/primitive.h"
#include "test_utils.h"

using namespace mlx::core;
using mlx::core::test::Failing;

namespace {

// Runs body(t) on n threads started together; returns when all have finished.
void run_threads(int n, const std::function<void(int)>& body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      ready++;
      while (ready.load() < n) {
        std::this_thread::yield();
      }
      body(t);
    });
  }
  for (auto& th : threads) {
    th.join();
  }
}

// Counts its evaluations, so a test can check that a shared node ran exactly once.
class Counting : public UnaryPrimitive {
 public:
  Counting(Stream s, std::atomic<int>* runs) : UnaryPrimitive(s), runs_(runs) {}
  void eval_cpu(const std::vector<array>& in, array& out) override {
    runs_->fetch_add(1);
    out.set_data(allocator::malloc(out.nbytes()));
    std::copy(in[0].data<float>(), in[0].data<float>() + in[0].size(), out.data<float>());
  }
  void eval_gpu(const std::vector<array>& in, array& out) override {
    throw std::runtime_error("[Counting] CPU only");
  }
  const char* name() const override { return "Counting"; }

 private:
  std::atomic<int>* runs_;
};

}  // namespace

TEST(Concurrency, SharedChainEvaluatedOnceByManyThreads) {
  const Stream cpu = default_stream(Device::cpu);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> runs{0};
    array base = full({64}, 1.0f, float32, cpu);
    array shared({64}, float32, std::make_shared<Counting>(cpu, &runs), {base});
    array chain = shared;
    for (int i = 0; i < 500; ++i) {
      chain = add(chain, array(1.0f), cpu);
    }
    std::atomic<int> ok{0};
    run_threads(8, [&](int t) {
      // Each thread evaluates a different node of the same chain (overlapping tapes).
      array mine = multiply(chain, array(static_cast<float>(t)), cpu);
      eval(mine);
      if (mine.data<float>()[63] == 501.0f * t) {
        ok++;
      }
    });
    EXPECT_EQ(ok.load(), 8);
    EXPECT_EQ(runs.load(), 1);
  }
}

TEST(Concurrency, OverlappingGraphsOnMixedStreams) {
  // Threads claim nodes on streams others read from: stream order must follow claim order, or
  // a worker would wait for a node queued behind it.
  Stream s1 = new_stream(Device::cpu);
  Stream s2 = new_stream(Device::cpu);
  for (int round = 0; round < 30; ++round) {
    array x = full({128}, 2.0f, float32, s1);
    std::vector<array> levels;
    array y = x;
    for (int i = 0; i < 40; ++i) {
      y = add(y, array(1.0f), i % 2 ? s1 : s2);
      levels.push_back(y);
    }
    std::atomic<int> ok{0};
    run_threads(6, [&](int t) {
      std::mt19937 gen(round * 31 + t);
      Stream mine = new_stream(Device::cpu);
      for (int k = 0; k < 5; ++k) {
        int i = static_cast<int>(gen() % levels.size());
        array r = multiply(levels[i], array(2.0f), (t + k) % 3 == 0 ? mine : (k % 2 ? s1 : s2));
        if (t % 2) {
          async_eval(r);
        }
        eval(r);
        if (r.data<float>()[0] == 2.0f * (3.0f + i)) {
          ok++;
        }
      }
    });
    EXPECT_EQ(ok.load(), 30);
  }
  synchronize();
}

// A failing node on the CPU stream, its lazy consumer on `lazy_stream`, and six threads each
// evaluating their own op over that consumer: every thread gets the error, and so does a later
// evaluation of the consumer (a failed node stays failed, it is not recomputed).
static void expect_shared_failure(const Stream& lazy_stream) {
  const Stream cpu = default_stream(Device::cpu);
  for (int round = 0; round < 10; ++round) {
    array in = array({1.0f, 2.0f});
    array bad({2}, float32, std::make_shared<Failing>(cpu), {in});
    array lazy = exp(bad, lazy_stream);
    std::atomic<int> failed{0};
    run_threads(6, [&](int t) {
      array mine = add(lazy, array(static_cast<float>(t)), cpu);
      try {
        eval(mine);
      } catch (const std::runtime_error&) {
        failed++;
      }
    });
    EXPECT_EQ(failed.load(), 6);
    EXPECT_EQ(lazy.status(), array::Status::failed);
    EXPECT_THROW(eval(lazy), std::runtime_error);
  }
}

TEST(Concurrency, SharedFailureReachesEveryThread) {
  expect_shared_failure(default_stream(default_device()));
  // The stream still runs new work.
  array fine = add(array(1.0f), array(2.0f), default_stream(Device::cpu));
  EXPECT_EQ(fine.item<float>(), 3.0f);
}

// The consumer on another stream: no consumer claimed before the failure may wait for a later
// claim of the failed node (two streams' workers deadlocked when failed nodes were re-claimed).
TEST(Concurrency, SharedFailureAcrossStreams) { expect_shared_failure(new_stream(Device::cpu)); }

TEST(Concurrency, IndependentDeepChainsPerThread) {
  std::atomic<int> ok{0};
  run_threads(4, [&](int t) {
    array x = array(static_cast<float>(t));
    for (int i = 0; i < 20000; ++i) {
      x = x + array(1.0f);
      if (i % 5000 == 0) {
        async_eval(x);
      }
    }
    if (x.item<float>() == t + 20000.0f) {
      ok++;
    }
  });
  EXPECT_EQ(ok.load(), 4);
}

TEST(Concurrency, ThreadLocalStreams) {
  ThreadLocalStream tls = new_thread_local_stream(Device::cpu);
  Stream here = stream_from_thread_local_stream(tls);
  EXPECT_EQ(stream_from_thread_local_stream(tls), here);  // one per thread, kept
  ThreadLocalStream other = new_thread_local_stream(Device::cpu);
  EXPECT_NE(stream_from_thread_local_stream(other), here);
  std::vector<int> indices(4, -1);
  run_threads(4, [&](int t) {
    Stream s = stream_from_thread_local_stream(tls);
    array r = add(full({8}, static_cast<float>(t), float32, s), array(1.0f), s);
    eval(r);
    if (r.data<float>()[7] == t + 1.0f) {
      indices[t] = s.index;
    }
  });
  for (int t = 0; t < 4; ++t) {
    EXPECT_GE(indices[t], 0);
    EXPECT_NE(indices[t], here.index);
    for (int u = 0; u < t; ++u) {
      EXPECT_NE(indices[t], indices[u]);
    }
  }
}

namespace {

// Adam on a small MLP, the forward of each gradient running (its nodes dropping their inputs)
// while the backward graph is built from a copy of the tape. Runs must agree: a node whose
// inputs went while its kernel still read them gave different, sometimes NaN, parameters.
std::vector<array> train_small_mlp(int steps) {
  random::seed(7);
  array x = random::normal({32, 8}, float32, 0.f, 1.f);
  array y = random::normal({32, 1}, float32, 0.f, 1.f);
  std::vector<array> p = {random::normal({16, 8}, float32, 0.f, 0.3f), zeros({16}),
                          random::normal({1, 16}, float32, 0.f, 0.3f), zeros({1})};
  std::vector<array> m, v;
  for (auto& q : p) {
    m.push_back(zeros_like(q));
    v.push_back(zeros_like(q));
  }
  auto loss = [&](const std::vector<array>& q) {
    array h = maximum(addmm(q[1], x, transpose(q[0])), array(0.f));
    return std::vector<array>{mean(square(addmm(q[3], h, transpose(q[2])) - y))};
  };
  auto step = value_and_grad(loss, std::vector<int>{0, 1, 2, 3});
  for (int i = 0; i < steps; ++i) {
    auto [value, g] = step(p);
    auto r =
        fast::adam_update(p, g, m, v, array(0.01f), array(1.f), array(1.f), 0.9, 0.999, 1e-8, 0.0);
    for (size_t k = 0; k < p.size(); ++k) {
      p[k] = r[k];
      m[k] = r[p.size() + k];
      v[k] = r[2 * p.size() + k];
    }
    std::vector<array> state = p;
    state.push_back(value[0]);
    eval(state);
  }
  return p;
}

}  // namespace

TEST(Concurrency, TrainingWhileTheForwardOverlapsTheVjp) {
  detail::set_vjp_overlap(detail::VjpOverlap::always);  // the default is GPU streams only
  auto first = train_small_mlp(1000);
  auto second = train_small_mlp(1000);
  for (size_t k = 0; k < first.size(); ++k) {
    mlx::core::test::expect_close(second[k], mlx::core::test::to_vector(first[k]), 1e-5);
  }
  detail::set_vjp_overlap(detail::VjpOverlap::gpu);
}

TEST(Concurrency, WaitersForDifferentPositionsOfOneStreamAllWake) {
  // One stream's worker runs a long chain handed over by async_eval while threads wait for
  // different links of it: a completed position wakes the waiters only once the least position
  // they wait for is reached, and each must re-register a later one when woken early.
  Stream s = new_stream(Device::cpu);
  for (int round = 0; round < 20; ++round) {
    std::vector<array> chain{full({4}, 0.0f, s)};
    for (int i = 0; i < 2000; ++i) {
      chain.push_back(add(chain.back(), array(1.0f), s));
    }
    async_eval({chain.back()});
    std::vector<float> seen(8);
    run_threads(8, [&](int t) {
      const int link = 2000 - t * 250;  // later links first: their waits start earliest
      chain[link].wait();
      seen[t] = chain[link].data<float>()[3];
    });
    for (int t = 0; t < 8; ++t) {
      EXPECT_EQ(seen[t], 2000.0f - t * 250) << "round " << round << ", thread " << t;
    }
    synchronize(s);
  }
}
