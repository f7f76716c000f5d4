// Traces, snapshots, cache policies and statistics of the caching allocator, on allocators
// over a counting fake system allocator (so the tests see every system call).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "mlx/memory/cache_policy.h"
#include "mlx/memory/caching_allocator.h"
#include "mlx/memory/trace.h"
#include "mlx/mlx.h"

using namespace mlx::core;
using namespace mlx::core::allocator;

namespace {

struct FakeSystem {
  // Atomic: the idle trimmer's thread may release blocks of these allocators too.
  static inline std::atomic<int> mallocs = 0, frees = 0, fail_next = 0, trims = 0;
  static void* malloc(size_t size) {
    if (fail_next > 0) {
      --fail_next;
      return nullptr;
    }
    ++mallocs;
    return std::malloc(size);
  }
  static void free(void* p, size_t) {
    ++frees;
    std::free(p);
  }
  static void trim() { ++trims; }
  static SystemMemory memory() {
    mallocs = frees = fail_next = trims = 0;
    return SystemMemory{"fake", malloc, free, nullptr, trim};
  }
};

constexpr size_t MiB = size_t(1) << 20;

}  // namespace

TEST(CachePolicy, PresetsAreTheDocumentsTemplates) {
  CachePolicy t = cache_policy_preset("throughput_training");
  EXPECT_EQ(t.page_size, 16u << 10);
  EXPECT_EQ(t.trim_bytes, 512 * MiB);
  EXPECT_EQ(t.max_cache, 4096 * MiB);
  CachePolicy i = cache_policy_preset("low_latency_inference");
  EXPECT_EQ(i.page_size, 4u << 10);
  EXPECT_EQ(i.trim_bytes, 64 * MiB);
  EXPECT_EQ(i.max_cache, 1024 * MiB);
  CachePolicy d = cache_policy_preset("distributed_training");
  EXPECT_EQ(d.page_size, 32u << 10);
  EXPECT_EQ(d.trim_bytes, 1024 * MiB);
  EXPECT_EQ(d.max_cache, 8192 * MiB);
  EXPECT_TRUE(cache_policy_preset("adaptive").adaptive);
  EXPECT_THROW(cache_policy_preset("fast"), std::invalid_argument);
}

TEST(CachePolicy, ParsesBytesAndRejectsBadValues) {
  EXPECT_EQ(parse_bytes("4096", "x"), 4096u);
  EXPECT_EQ(parse_bytes("64K", "x"), 65536u);
  EXPECT_EQ(parse_bytes("1.5M", "x"), 3 * MiB / 2);
  EXPECT_EQ(parse_bytes("2G", "x"), 2048 * MiB);
  EXPECT_THROW(parse_bytes("lots", "x"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("-1", "x"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("12Q", "x"), std::invalid_argument);
  CachePolicy p;
  p.page_size = 5000;  // not a power of two
  EXPECT_THROW(validate(p), std::invalid_argument);
  p.page_size = 1024;  // below 4 KiB
  EXPECT_THROW(validate(p), std::invalid_argument);
}

TEST(CachePolicy, EnvironmentOverridesThePreset) {
  setenv("MLX_CACHE_POLICY", "low_latency_inference", 1);
  setenv("MLX_CACHE_PAGE_SIZE", "8K", 1);
  CachePolicy p = cache_policy_from_env();
  unsetenv("MLX_CACHE_POLICY");
  unsetenv("MLX_CACHE_PAGE_SIZE");
  EXPECT_EQ(p.page_size, 8192u);
  EXPECT_EQ(p.trim_bytes, 64 * MiB);
  setenv("MLX_CACHE_TRIM_BYTES", "many", 1);
  EXPECT_THROW(cache_policy_from_env(), std::invalid_argument);
  unsetenv("MLX_CACHE_TRIM_BYTES");
}

TEST(CachePolicy, PageSizeChangesRoundingAndFragmentation) {
  CachingAllocator a(FakeSystem::memory(), 1 << 30);
  CachePolicy p;
  p.page_size = 16 << 10;
  a.set_policy(p);
  Buffer b = a.malloc(20000);
  EXPECT_EQ(a.size(b), 32768u);
  MemoryStats s = a.stats();
  EXPECT_NEAR(s.fragmentation(), 1.0 - 20000.0 / 32768.0, 1e-12);
  a.free(b);
  // A 4 KiB page keeps the same request nearly exact.
  a.set_policy(CachePolicy{});
  a.clear_cache();
  a.reset_stats();
  Buffer c = a.malloc(20000);
  EXPECT_EQ(a.size(c), 20480u);
  a.free(c);
}

TEST(CachePolicy, TrimBytesFreesInChunks) {
  CachingAllocator a(FakeSystem::memory(), 1 << 30);
  CachePolicy p;
  p.max_cache = 64 << 10;
  p.trim_bytes = 48 << 10;
  a.set_policy(p);
  std::vector<Buffer> bs;
  for (int i = 0; i < 20; ++i) {
    bs.push_back(a.malloc(4096));
  }
  int trims_before = FakeSystem::frees;
  for (auto& b : bs) {
    a.free(b);
  }
  // 80 KiB freed into a 64 KiB cache: one trim of 48 KiB (12 blocks), not four of one block.
  EXPECT_EQ(FakeSystem::frees - trims_before, 12);
  EXPECT_EQ(a.stats().cache_memory, 8u * 4096u);
}

TEST(CachePolicy, AdaptiveClassesServeNearbySizes) {
  // Requests alternate between nearby sizes held at once; exact rounding misses whenever the
  // larger one finds only the smaller block cached.
  auto run = [](bool adaptive) {
    CachingAllocator a(FakeSystem::memory(), 1 << 30);
    CachePolicy p;
    p.adaptive = adaptive;
    a.set_policy(p);
    for (int i = 0; i < 3 * int(SizeClasses::kWindow); ++i) {
      size_t n = (i % 3 == 0) ? 100 << 10 : (i % 3 == 1 ? 104 << 10 : 108 << 10);
      Buffer b = a.malloc(n);
      if (i % 2 == 0) {
        Buffer c = a.malloc((208 << 10) - n);
        a.free(c);
      }
      a.free(b);
    }
    return a.stats();
  };
  MemoryStats plain = run(false), adaptive = run(true);
  EXPECT_GE(adaptive.hit_rate(), plain.hit_rate());
  EXPECT_LE(adaptive.num_system_allocs, plain.num_system_allocs);
}

TEST(SizeClasses, PicksFrequentSizesWithinTheWaste) {
  SizeClasses c;
  for (size_t i = 0; i < SizeClasses::kWindow; ++i) {
    c.observe(i % 2 ? 40960 : 12288);
  }
  ASSERT_EQ(c.classes().size(), 2u);
  EXPECT_EQ(c.pick(36864, 16384), 40960u);    // rounds up to the class
  EXPECT_EQ(c.pick(8192, 2048), 8192u);       // 12288 wastes more than allowed
  EXPECT_EQ(c.pick(45056, 1 << 20), 45056u);  // no class above
}

TEST(BufferCache, ReleasesIdleBlocksOldestFirst) {
  std::vector<void*> freed;
  BufferCache cache([&](void* p, size_t) { freed.push_back(p); });
  int a, b, c;
  cache.put(&a, 4096, 10);
  cache.put(&b, 4096, 20);
  cache.put(&c, 4096, 30);
  EXPECT_EQ(cache.release_idle(25), 8192u);
  EXPECT_EQ(freed, (std::vector<void*>{&a, &b}));
  cache.touch_all(100);
  EXPECT_EQ(cache.release_idle(50), 0u);
  cache.clear();
}

TEST(CachingAllocator, IdleCacheGoesBackToTheSystem) {
  CachingAllocator a(FakeSystem::memory(), 1 << 30);
  Buffer b = a.malloc(1 << 20);
  a.free(b);
  ASSERT_EQ(a.stats().cache_memory, size_t(1) << 20);
  CachePolicy p;
  p.idle_seconds = 1e-3;
  a.set_policy(p);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  a.trim_idle();
  EXPECT_EQ(a.stats().cache_memory, 0u);
  EXPECT_EQ(FakeSystem::frees, 1);
  EXPECT_GE(FakeSystem::trims, 1);  // the system allocator was asked to give pages back
}

TEST(CachingAllocator, RetriesAndOomsAreCounted) {
  CachingAllocator a(FakeSystem::memory(), 8 << 20);
  Buffer b = a.malloc(1 << 20);
  a.free(b);  // cached, so a failed system call can be retried after releasing it
  FakeSystem::fail_next = 1;
  Buffer c = a.malloc(2 << 20);
  EXPECT_EQ(a.stats().num_retries, 1u);
  EXPECT_THROW(a.malloc(16 << 20), out_of_memory);  // beyond the limit
  EXPECT_EQ(a.stats().num_ooms, 1u);
  a.free(c);
  a.reset_stats();
  EXPECT_EQ(a.stats().num_retries + a.stats().num_ooms, 0u);
}

TEST(CachingAllocator, PeakFootprintCountsTheCache) {
  CachingAllocator a(FakeSystem::memory(), 1 << 30);
  Buffer x = a.malloc(4 << 20);
  a.free(x);
  Buffer y = a.malloc(1 << 20);  // cannot reuse the 4 MiB block (too much waste)
  MemoryStats s = a.stats();
  EXPECT_EQ(s.peak_memory, size_t(4) << 20);
  EXPECT_EQ(s.peak_footprint, size_t(5) << 20);  // active 1 MiB + 4 MiB cached
  a.free(y);
}

TEST(Trace, RecordsOpStreamAndEveryEvent) {
  CachingAllocator a(FakeSystem::memory(), 1 << 30);
  OpContext op{"Exp", &a, 3};
  trace::start(nullptr);
  set_current_op(&op);
  Buffer b = a.malloc(10000);
  set_current_op(nullptr);
  a.free(b);
  Buffer c = a.malloc(10000);  // from the cache, outside evaluation
  Buffer d = a.malloc(100);
  a.free(d);
  std::vector<trace::Event> events = trace::stop();
  a.free(c);
  std::vector<trace::Event> mine;
  for (auto& e : events) {
    if (std::string(e.device) == "fake") {
      mine.push_back(e);
    }
  }
  ASSERT_EQ(mine.size(), 7u);
  EXPECT_EQ(mine[0].kind, trace::Kind::segment_alloc);
  EXPECT_EQ(mine[1].kind, trace::Kind::alloc);
  EXPECT_STREQ(mine[1].op, "Exp");
  EXPECT_EQ(mine[1].stream, 3);
  EXPECT_EQ(mine[1].requested, 10000u);
  EXPECT_EQ(mine[1].size, 12288u);
  EXPECT_FALSE(mine[1].cached);
  EXPECT_EQ(mine[2].kind, trace::Kind::free);
  EXPECT_TRUE(mine[2].cached);
  EXPECT_EQ(mine[3].kind, trace::Kind::alloc);
  EXPECT_TRUE(mine[3].cached);
  EXPECT_EQ(mine[3].op, nullptr);
  EXPECT_EQ(mine[3].stream, -1);
  for (size_t i = 1; i < mine.size(); ++i) {
    EXPECT_GT(mine[i].seq, mine[i - 1].seq);
  }
  EXPECT_FALSE(trace::enabled());
}

TEST(Trace, RecordsRetriesReleasesAndOoms) {
  CachingAllocator a(FakeSystem::memory(), 8 << 20);
  a.free(a.malloc(1 << 20));  // cached: a failed system call is retried after releasing it
  trace::start(nullptr);
  FakeSystem::fail_next = 1;
  Buffer c = a.malloc(2 << 20);
  EXPECT_THROW(a.malloc(16 << 20), out_of_memory);  // beyond the limit
  std::vector<trace::Event> events = trace::stop();
  a.free(c);
  std::vector<trace::Kind> kinds;
  for (auto& e : events) {
    if (std::string(e.device) == "fake") {
      kinds.push_back(e.kind);
    }
  }
  using K = trace::Kind;
  EXPECT_EQ(kinds, (std::vector<K>{K::retry, K::segment_free, K::segment_alloc, K::alloc, K::oom}));
}

TEST(Trace, EveryAllocationIsFreedOrLiveInTheSnapshot) {
  array x = ones({64, 64});
  eval(x);
  trace::start(nullptr);
  std::vector<array> kept;
  for (int i = 0; i < 5; ++i) {
    array y = exp(x) * array(float(i)) + x;
    eval(y);
    if (i % 2 == 0) {
      kept.push_back(y);
    }
  }
  std::vector<trace::Event> events = trace::stop();
  std::map<std::pair<std::string, const void*>, bool> live;
  size_t allocs = 0;
  for (auto& e : events) {
    auto key = std::make_pair(std::string(e.device), e.address);
    if (e.kind == trace::Kind::alloc) {
      live[key] = true;
      ++allocs;
    } else if (e.kind == trace::Kind::free) {
      EXPECT_TRUE(live.count(key) == 0 || live[key]) << "free of a block not handed out";
      live.erase(key);
    }
  }
  EXPECT_GE(allocs, 5u);
  std::set<std::pair<std::string, const void*>> in_snapshot;
  for (auto* a : CachingAllocator::all()) {
    for (auto& b : a->snapshot().live) {
      in_snapshot.emplace(a->name(), b.address);
    }
  }
  for (auto& [key, _] : live) {
    EXPECT_TRUE(in_snapshot.count(key)) << "an allocation neither freed nor live";
  }
  EXPECT_GE(live.size(), kept.size());
}

TEST(Memory, PeakIsThePeakOfTheSum) {
  // Two allocators whose peaks happen at different times: the sum of their peaks would be
  // 3 MiB; the process never held more than 2 MiB.
  eval(ones({4}));
  reset_peak_memory();
  size_t base = get_memory_stats().peak_memory;
  CachingAllocator a(FakeSystem::memory(), 1 << 30), b(FakeSystem::memory(), 1 << 30);
  Buffer x = a.malloc(2 << 20);
  a.free(x);
  a.clear_cache();
  Buffer y = b.malloc(1 << 20);
  EXPECT_EQ(get_memory_stats().peak_memory - base, size_t(2) << 20);
  b.free(y);
}

TEST(Memory, OneAllocatorPerDeviceByName) {
  std::vector<std::string> names = memory_devices();
  ASSERT_EQ(names[0], "cpu");
  size_t total = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(names[i], "cuda:" + std::to_string(i - 1));  // one per GPU
    }
    total += memory_info(names[i]).total;
  }
  EXPECT_EQ(memory_info().total, total);
  if (names.size() > 1) {
    EXPECT_EQ(memory_info("cuda").total, memory_info("cuda:0").total);
  }
  EXPECT_THROW(memory_info("tpu"), std::invalid_argument);
  EXPECT_THROW(get_memory_stats("cuda:" + std::to_string(names.size())), std::invalid_argument);
}

TEST(Memory, PoolLimitIsAFractionOfTheMemory) {
  size_t old = get_memory_limit();
  EXPECT_THROW(set_memory_pool_limit(0.0), std::invalid_argument);
  EXPECT_THROW(set_memory_pool_limit(1.5), std::invalid_argument);
  set_memory_pool_limit(0.5);
  EXPECT_NEAR(double(get_memory_limit()), 0.5 * double(memory_info("cpu").total), double(1 << 20));
  set_memory_limit(old);
}

TEST(Memory, SetEnvSwitchesTheDebugLogAtRunTime) {
  testing::internal::CaptureStderr();
  set_env("MLX_MEMORY_DEBUG", "1");
  eval(exp(ones({1000})));
  set_env("MLX_MEMORY_DEBUG", "0");
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("[memory:cpu] malloc"), std::string::npos) << log;
  testing::internal::CaptureStderr();
  eval(exp(ones({1000})));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_THROW(set_env("MLX_CACHE_PAGE_SIZE", "3000"), std::invalid_argument);
  EXPECT_EQ(std::getenv("MLX_CACHE_PAGE_SIZE"), nullptr);  // a bad value changes nothing
}

TEST(Memory, ConcurrentTracingPoliciesAndStats) {
  // Allocating threads on two allocators while another toggles traces, one switches policies
  // (idle trimming on and off: the background trimmer) and one reads statistics and snapshots.
  // Under scripts/sanitize.sh tsan this is the data-race check of the memory layer.
  CachingAllocator a(FakeSystem::memory(), 1 << 30), b(FakeSystem::memory(), 1 << 30);
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      OpContext op{"Stress", &a, t};
      set_current_op(&op);
      for (size_t i = 0; !stop; ++i) {
        std::vector<Buffer> bs;
        for (size_t k = 0; k < 8; ++k) {
          bs.push_back((k % 2 ? b : a).malloc(4096 * (1 + (i + k) % 7)));
        }
        for (size_t k = 0; k < 8; ++k) {
          (k % 2 ? b : a).free(bs[k]);
        }
        rounds++;
      }
      set_current_op(nullptr);
    });
  }
  threads.emplace_back([&] {
    while (!stop) {
      trace::start(nullptr, 500);
      std::vector<trace::Event> events = trace::stop();
      for (size_t i = 1; i < events.size(); ++i) {
        ASSERT_LT(events[i - 1].seq, events[i].seq);
      }
    }
  });
  threads.emplace_back([&] {
    for (int i = 0; !stop; ++i) {
      CachePolicy p;
      p.idle_seconds = i % 2 ? 0.001 : 0;
      p.adaptive = i % 3 == 0;
      a.set_policy(p);
      b.set_policy(p);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  threads.emplace_back([&] {
    while (!stop) {
      MemoryStats s = a.stats();
      ASSERT_LE(s.active_memory, s.peak_memory);
      (void)b.snapshot();
      (void)get_memory_stats();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_GT(rounds.load(), 0);
  EXPECT_EQ(a.stats().active_memory, 0u);
  EXPECT_EQ(b.stats().active_memory, 0u);
  a.set_policy(CachePolicy{});
  b.set_policy(CachePolicy{});
}
