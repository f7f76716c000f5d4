#include "mlx/memory/caching_allocator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "mlx/memory/trace.h"

namespace mlx::core::allocator {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}

std::string format_bytes(size_t bytes) {
  char buf[64];
  if (bytes >= (size_t(1) << 30)) {
    std::snprintf(buf, sizeof(buf), "%zu B (%.2f GiB)", bytes, bytes / double(1 << 30));
  } else if (bytes >= (size_t(1) << 20)) {
    std::snprintf(buf, sizeof(buf), "%zu B (%.2f MiB)", bytes, bytes / double(1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%zu B", bytes);
  }
  return buf;
}

const char* op_name(const OpContext* op) { return op ? op->name : "user"; }

uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Registry {
  std::mutex mutex;
  std::vector<CachingAllocator*> allocators;
};
Registry& registry() {
  static auto* r = new Registry();  // leaked with the allocators themselves
  return *r;
}

// Sums over every allocator and their peaks: the process's real totals, where the sum of each
// allocator's own peak would only bound them.
// Kept only once a second allocator exists: with one, its own peaks are the process's, and its
// hot path skips these atomics.
std::atomic<size_t> g_active{0}, g_held{0}, g_peak_active{0}, g_peak_held{0};
std::atomic<bool> g_multi{false};

void raise_peak(std::atomic<size_t>& peak, size_t value) {
  size_t old = peak.load(std::memory_order_relaxed);
  while (value > old && !peak.compare_exchange_weak(old, value, std::memory_order_relaxed)) {
  }
}

// One thread for every allocator whose policy trims idle blocks: a program that stops
// allocating (training ended) still gives its idle cache back.
// It sleeps until a policy asks for idle trimming, then wakes a few times per idle period of
// the shortest such policy, and sleeps again once none asks.
struct IdleTrimmer {
  std::mutex mutex;
  std::condition_variable wake;
  bool started = false;
  bool changed = false;

  // `trims`: the new policy trims idle blocks (the thread starts only for such a policy).
  void policy_changed(bool trims) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!started && !trims) {
      return;
    }
    if (!started) {
      started = true;
      std::thread([this] { run(); }).detach();
    }
    changed = true;
    wake.notify_all();
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed = false;
      lock.unlock();
      double shortest = CachingAllocator::trim_all_idle();
      lock.lock();
      if (changed) {
        continue;
      }
      if (shortest == 0) {
        wake.wait(lock, [this] { return changed; });
      } else {
        auto period = std::chrono::duration<double>(std::clamp(shortest / 4, 0.01, 5.0));
        wake.wait_for(lock, period, [this] { return changed; });
      }
    }
  }
};
IdleTrimmer& idle_trimmer() {
  static auto* t = new IdleTrimmer();  // leaked: the thread outlives static destruction
  return *t;
}

}  // namespace

const char* current_op() {
  const OpContext* op = current_op_context();
  return op ? op->name : nullptr;
}

CachingAllocator::CachingAllocator(SystemMemory system, size_t memory_limit)
    : system_(system),
      total_memory_(memory_limit),
      cache_([this](void* block, size_t size) { released_to_system_locked(block, size); }) {
  stats_.memory_limit = memory_limit;
  stats_.cache_limit = memory_limit;
  spare_nodes_.reserve(kMaxSpareNodes);
  memory_debug_ = env_flag("MLX_MEMORY_DEBUG");
  cache_debug_ = env_flag("MLX_CACHE_DEBUG");
  try {
    set_policy(cache_policy_from_env());
  } catch (const std::exception& e) {
    // Creation must not throw (it runs on the first allocation); say why the setting is ignored.
    std::fprintf(stderr, "[memory:%s] %s Using the default cache policy.\n", system_.name,
                 e.what());
  }
  std::vector<CachingAllocator*> others;
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.allocators.push_back(this);
    if (r.allocators.size() == 2 && !g_multi.exchange(true)) {
      others = r.allocators;
    }
  }
  // The second allocator: from now on the sums are kept; they start from every allocator's
  // current bytes, their peaks from the peaks the first one reached alone.
  for (auto* a : others) {
    std::lock_guard<std::mutex> lock(a->mutex_);
    a->publish_locked();
    raise_peak(g_peak_active, a->stats_.peak_memory);
    raise_peak(g_peak_held, a->stats_.peak_footprint);
  }
}

CachingAllocator::~CachingAllocator() {
  {
    auto& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::erase(r.allocators, this);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  cache_.clear();
  if (g_multi.load()) {  // its bytes leave the sums with it
    g_active.fetch_sub(published_active_);
    g_held.fetch_sub(published_held_);
  }
}

std::vector<CachingAllocator*> CachingAllocator::all() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.allocators;
}

double CachingAllocator::trim_all_idle() {
  // Under the registry's lock, so that no allocator is destroyed while it is being trimmed.
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  double shortest = 0;
  for (auto* a : r.allocators) {
    double idle = a->trim_idle();
    shortest = idle > 0 && (shortest == 0 || idle < shortest) ? idle : shortest;
  }
  return shortest;
}

bool CachingAllocator::keeps_global_sums() { return g_multi.load(); }
size_t CachingAllocator::global_peak_active() { return g_peak_active.load(); }
size_t CachingAllocator::global_peak_footprint() { return g_peak_held.load(); }
void CachingAllocator::reset_global_peaks() {
  g_peak_active.store(g_active.load());
  g_peak_held.store(g_held.load());
}

size_t CachingAllocator::round_size(size_t size, size_t page) {
  if (size >= page) {
    return (size + page - 1) / page * page;
  }
  size_t rounded = 64;  // one cache line: also the alignment of every block
  while (rounded < size) {
    rounded <<= 1;
  }
  return rounded;
}

void CachingAllocator::publish_locked() {
  size_t active = stats_.active_memory;
  size_t held = active + cache_.cache_bytes();
  stats_.peak_footprint = std::max(stats_.peak_footprint, held);
  if (!g_multi.load(std::memory_order_relaxed)) {
    return;
  }
  if (active != published_active_) {
    // Unsigned wrap-around adds the (possibly negative) difference.
    size_t now = g_active.fetch_add(active - published_active_) + (active - published_active_);
    raise_peak(g_peak_active, now);
    published_active_ = active;
  }
  if (held != published_held_) {
    size_t now = g_held.fetch_add(held - published_held_) + (held - published_held_);
    raise_peak(g_peak_held, now);
    published_held_ = held;
  }
}

void CachingAllocator::released_to_system_locked(void* block, size_t size) {
  system_.free(block, size);
  stats_.num_system_frees++;
  if (trace::enabled()) {
    trace::record({0, 0, block, size, 0, nullptr, system_.name, 0, -1, trace::Kind::segment_free,
                   false, stats_.active_memory, cache_.cache_bytes()});
  }
  if (cache_debug_) {
    std::fprintf(stderr, "[cache:%s] release %s\n", system_.name, format_bytes(size).c_str());
  }
}

void* CachingAllocator::system_malloc_locked(size_t size, size_t requested) {
  // Stay within the limit: give cached blocks back before asking the system.
  size_t held = stats_.active_memory + cache_.cache_bytes();
  if (held + size > stats_.memory_limit) {
    cache_.release(std::max(held + size - stats_.memory_limit, policy_.trim_bytes));
  }
  if (stats_.active_memory + size > stats_.memory_limit) {
    return nullptr;
  }
  void* block = system_.malloc(size);
  if (block == nullptr && (cache_.cache_bytes() > 0 || system_.synchronize)) {
    // Release the cache (after the device finished with it) and try once more.
    stats_.num_retries++;
    if (trace::enabled()) {
      const OpContext* op = current_op_context();
      trace::record({0, 0, nullptr, size, requested, op ? op->name : nullptr, system_.name, 0,
                     op ? op->stream : -1, trace::Kind::retry, false, stats_.active_memory,
                     cache_.cache_bytes()});
    }
    if (system_.synchronize) {
      system_.synchronize();
    }
    cache_.clear();
    block = system_.malloc(size);
  }
  if (block != nullptr) {
    stats_.num_system_allocs++;
  }
  return block;
}

Buffer CachingAllocator::malloc(size_t requested) {
  const OpContext* op = current_op_context();
  // Before the lock: capturing a Python stack may run the garbage collector, which frees.
  uint32_t stack = trace::enabled() ? trace::current_stack() : 0;
  std::lock_guard<std::mutex> lock(mutex_);
  size_t size = round_size(requested, cache_.page_size());
  bool classed = policy_.adaptive && size >= cache_.page_size();
  if (classed) {
    classes_.observe(size);
  }
  if (idle_ns_ != 0) {
    trim_idle_locked(steady_ns());
  }
  size_t block_size = 0;
  void* block = cache_.reuse(size, &block_size);
  bool hit = block != nullptr;
  bool tracing = trace::enabled();
  if (hit) {
    stats_.cache_hits++;
  } else {
    stats_.cache_misses++;
    if (classed) {
      // A new block gets its class's size, so that it serves the sizes near it later; the
      // cache was searched for the request itself first, as without classes.
      size = classes_.pick(size, cache_.max_waste(size));
    }
    block = system_malloc_locked(size, requested);
    block_size = size;
    if (block == nullptr) {
      stats_.num_ooms++;
      if (tracing) {
        trace::record({0, 0, nullptr, size, requested, op ? op->name : nullptr, system_.name, stack,
                       op ? op->stream : -1, trace::Kind::oom, false, stats_.active_memory,
                       cache_.cache_bytes()});
      }
      publish_locked();
      std::ostringstream msg;
      msg << "[malloc] Out of memory on " << system_.name << " while evaluating " << op_name(op)
          << ": requested " << format_bytes(requested) << ", active "
          << format_bytes(stats_.active_memory) << ", cache " << format_bytes(cache_.cache_bytes())
          << ", limit " << format_bytes(stats_.memory_limit) << ".";
      throw out_of_memory(msg.str());
    }
    if (tracing) {
      trace::record({0, 0, block, size, requested, op ? op->name : nullptr, system_.name, stack,
                     op ? op->stream : -1, trace::Kind::segment_alloc, false, stats_.active_memory,
                     cache_.cache_bytes()});
    }
  }
  const Block entry{block_size,           requested, op ? op->name : nullptr, stack,
                    op ? op->stream : -1, serial_++};
  if (spare_nodes_.empty()) {
    live_.emplace(block, entry);
  } else {
    LiveBlocks::node_type node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = block;
    node.mapped() = entry;
    live_.insert(std::move(node));
  }
  stats_.active_memory += block_size;
  stats_.active_requested += requested;
  stats_.total_requested += requested;
  stats_.total_handed_out += block_size;
  if (stats_.active_memory > stats_.peak_memory) {
    stats_.peak_memory = stats_.active_memory;
  }
  publish_locked();
  if (tracing) {
    trace::record({0, 0, block, block_size, requested, op ? op->name : nullptr, system_.name, stack,
                   op ? op->stream : -1, trace::Kind::alloc, hit, stats_.active_memory,
                   cache_.cache_bytes()});
  }
  if (memory_debug_ || (cache_debug_ && hit)) {
    std::fprintf(stderr, "[memory:%s] malloc %s for %s -> block %s (%s), active %s\n", system_.name,
                 format_bytes(requested).c_str(), op_name(op), format_bytes(block_size).c_str(),
                 hit ? "cache hit" : "system", format_bytes(stats_.active_memory).c_str());
  }
  return Buffer(block);
}

void CachingAllocator::free(Buffer buffer) {
  if (!buffer) {
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(buffer.ptr());
  if (it == live_.end()) {
    std::fprintf(stderr, "[memory:%s] free of unknown block %p ignored\n", system_.name,
                 buffer.ptr());
    return;
  }
  Block b = it->second;
  if (spare_nodes_.size() < kMaxSpareNodes) {
    spare_nodes_.push_back(live_.extract(it));
  } else {
    live_.erase(it);
  }
  stats_.active_memory -= b.size;
  stats_.active_requested -= b.requested;
  bool keep = b.size <= stats_.cache_limit;
  bool tracing = trace::enabled();
  if (tracing) {
    const OpContext* op = current_op_context();
    trace::record({0, 0, buffer.ptr(), b.size, b.requested, op ? op->name : nullptr, system_.name,
                   0, op ? op->stream : -1, trace::Kind::free, keep, stats_.active_memory,
                   cache_.cache_bytes() + (keep ? b.size : 0)});
  }
  if (keep) {
    uint64_t now = idle_ns_ != 0 ? steady_ns() : 0;
    cache_.put(buffer.ptr(), b.size, now);
    trim_cache_locked(stats_.cache_limit);
    if (idle_ns_ != 0) {
      trim_idle_locked(now);
    }
  } else {
    released_to_system_locked(buffer.ptr(), b.size);
  }
  publish_locked();
  if (memory_debug_) {
    std::fprintf(stderr, "[memory:%s] free %s -> %s, active %s, cache %s\n", system_.name,
                 format_bytes(b.size).c_str(), keep ? "cache" : "system",
                 format_bytes(stats_.active_memory).c_str(),
                 format_bytes(cache_.cache_bytes()).c_str());
  }
}

size_t CachingAllocator::size(Buffer buffer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(buffer.ptr());
  return it == live_.end() ? 0 : it->second.size;
}

void CachingAllocator::trim_cache_locked(size_t keep_at_most) {
  if (cache_.cache_bytes() > keep_at_most) {
    // At least trim_bytes at once, so that a cache at its limit is not trimmed on every free.
    cache_.release(std::max(cache_.cache_bytes() - keep_at_most, policy_.trim_bytes));
  }
}

void CachingAllocator::trim_idle_locked(uint64_t now) {
  // Checked a few times per idle period, not on every call.
  if (now - last_idle_check_ < idle_ns_ / 4 || now < idle_ns_) {
    return;
  }
  last_idle_check_ = now;
  if (cache_.release_idle(now - idle_ns_) > 0 && system_.trim) {
    system_.trim();
  }
}

double CachingAllocator::trim_idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_ns_ != 0) {
    trim_idle_locked(steady_ns());
    publish_locked();
  }
  return policy_.idle_seconds;
}

void CachingAllocator::set_policy(const CachePolicy& policy) {
  validate(policy);
  std::lock_guard<std::mutex> lock(mutex_);
  policy_ = policy;
  cache_.set_page_size(policy.page_size);
  if (!policy.adaptive) {
    classes_.clear();
  }
  if (policy.max_cache != 0) {
    stats_.cache_limit = policy.max_cache;
  }
  uint64_t idle_ns = static_cast<uint64_t>(policy.idle_seconds * 1e9);
  if (idle_ns != 0 && idle_ns_ == 0) {
    cache_.touch_all(steady_ns());  // the time before counts as use, not idleness
  }
  idle_ns_ = idle_ns;
  trim_cache_locked(stats_.cache_limit);
  publish_locked();
  idle_trimmer().policy_changed(idle_ns != 0);
}

CachePolicy CachingAllocator::policy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CachePolicy p = policy_;
  p.max_cache = stats_.cache_limit;
  return p;
}

void CachingAllocator::set_debug(bool memory_debug, bool cache_debug) {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_debug_ = memory_debug;
  cache_debug_ = cache_debug;
}

std::vector<size_t> CachingAllocator::size_classes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return classes_.classes();
}

AllocatorSnapshot CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  AllocatorSnapshot s{system_.name, {}, {}, serial_};
  s.live.reserve(live_.size());
  for (auto& [ptr, b] : live_) {
    s.live.push_back({ptr, b.size, b.requested, b.op, b.stack, b.stream, b.serial});
  }
  std::sort(s.live.begin(), s.live.end(),
            [](const LiveBlock& a, const LiveBlock& b) { return a.serial < b.serial; });
  cache_.for_each([&](void* block, size_t size) { s.cached.emplace_back(block, size); });
  return s;
}

size_t CachingAllocator::set_memory_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t old = stats_.memory_limit;
  stats_.memory_limit = limit;
  if (stats_.active_memory + cache_.cache_bytes() > limit) {
    trim_cache_locked(limit > stats_.active_memory ? limit - stats_.active_memory : 0);
  }
  publish_locked();
  return old;
}

size_t CachingAllocator::set_cache_limit(size_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t old = stats_.cache_limit;
  stats_.cache_limit = limit;
  trim_cache_locked(limit);
  publish_locked();
  return old;
}

void CachingAllocator::clear_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (cache_.clear() > 0 && system_.trim) {
    system_.trim();
  }
  publish_locked();
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_memory = stats_.active_memory;
  stats_.peak_footprint = stats_.active_memory + cache_.cache_bytes();
}

void CachingAllocator::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_memory = stats_.active_memory;
  stats_.peak_footprint = stats_.active_memory + cache_.cache_bytes();
  stats_.num_system_allocs = stats_.num_system_frees = 0;
  stats_.cache_hits = stats_.cache_misses = 0;
  stats_.total_requested = stats_.total_handed_out = 0;
  stats_.num_retries = stats_.num_ooms = 0;
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats s = stats_;
  s.cache_memory = cache_.cache_bytes();
  return s;
}

}  // namespace mlx::core::allocator
