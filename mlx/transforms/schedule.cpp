#include "mlx/transforms/schedule.h"

#include <algorithm>

#include "mlx/export/memory_plan.h"
#include "mlx/memory/caching_allocator.h"
#include "mlx/primitives/transform.h"

namespace mlx::core::detail {

namespace {

int64_t rounded_bytes(const Shape& shape, Dtype dtype) {
  return static_cast<int64_t>(allocator::CachingAllocator::round_size(nbytes_of(shape, dtype)));
}

}  // namespace

// The greedy list schedule: repeatedly run, of the steps whose inputs are computed, the one
// that frees the most bytes net of what it allocates (ties: the earlier in eval's order).
// Buffers are tracked as eval keeps them: a view shares its input's; inputs, constants and
// outputs are never freed.
std::vector<int> memory_schedule(const Program& p) {
  const int n = static_cast<int>(p.steps.size());
  const std::vector<int> producer = producers(p);
  std::vector<int> root(p.num_values);
  for (size_t v = 0; v < p.num_values; ++v) {
    root[v] = static_cast<int>(v);
  }
  std::vector<char> held(p.num_values, 0);
  for (size_t v = 0; v < p.num_inputs; ++v) {
    held[v] = 1;
  }
  for (auto& [v, c] : p.constants) {
    held[v] = 1;
  }
  std::vector<int64_t> size(p.num_values, 0);
  std::vector<char> view(n, 0);
  std::vector<std::vector<int>> reads(n), consumers(n);
  std::vector<int> pending(n, 0), remaining(p.num_values, 0);
  for (int s = 0; s < n; ++s) {
    auto& st = p.steps[s];
    view[s] = is_view_step(*st.primitive) && !st.inputs.empty();
    for (size_t k = 0; k < st.shapes.size(); ++k) {
      const int v = st.first_output + static_cast<int>(k);
      size[v] = view[s] ? 0 : rounded_bytes(st.shapes[k], st.dtypes[k]);
      root[v] = view[s] ? root[st.inputs[0]] : v;
    }
    for (int in : st.inputs) {
      if (std::find(reads[s].begin(), reads[s].end(), in) != reads[s].end()) {
        continue;
      }
      reads[s].push_back(in);
      ++remaining[root[in]];
      const int c = producer[in];
      if (c >= 0 && std::find(consumers[c].begin(), consumers[c].end(), s) == consumers[c].end()) {
        consumers[c].push_back(s);
        ++pending[s];
      }
    }
  }
  for (int o : p.outputs) {
    held[root[o]] = 1;
  }
  std::vector<int> dfs_position(n, 0), dfs = eval_order(p);
  for (int i = 0; i < n; ++i) {
    dfs_position[dfs[i]] = i;
  }
  auto score = [&](int s) {
    int64_t net = 0;
    for (size_t k = 0; k < p.steps[s].shapes.size(); ++k) {
      net -= size[p.steps[s].first_output + k];
    }
    for (size_t i = 0; i < reads[s].size(); ++i) {
      const int r = root[reads[s][i]];
      int count = 0;  // reads of the buffer by s, once per value
      bool first = true;
      for (size_t j = 0; j < reads[s].size(); ++j) {
        if (root[reads[s][j]] == r) {
          count += 1;
          first = first && j >= i;
        }
      }
      bool kept = held[r] || (view[s] && root[p.steps[s].first_output] == r);
      if (first && !kept && remaining[r] == count) {
        net += size[r];
      }
    }
    return net;
  };
  std::vector<int> ready, order;
  for (int s = 0; s < n; ++s) {
    if (pending[s] == 0) {
      ready.push_back(s);
    }
  }
  while (!ready.empty()) {
    size_t best = 0;
    int64_t best_score = score(ready[0]);
    for (size_t i = 1; i < ready.size(); ++i) {
      int64_t sc = score(ready[i]);
      if (sc > best_score ||
          (sc == best_score && dfs_position[ready[i]] < dfs_position[ready[best]])) {
        best = i;
        best_score = sc;
      }
    }
    const int s = ready[best];
    ready.erase(ready.begin() + static_cast<long>(best));
    order.push_back(s);
    for (int in : reads[s]) {
      --remaining[root[in]];
    }
    for (int c : consumers[s]) {
      if (--pending[c] == 0) {
        ready.push_back(c);
      }
    }
  }
  return order;
}

// `p` with the Depends nodes that make eval's depth-first walk (eval_order) run its steps in
// `order`, and few of them: the walk is simulated, and where it would run a step b while the
// order wants steps a_1..a_k first (their inputs are computed by then: the order is
// topological), b's last input gets a Depends on them. The walk then runs them, then b.
Program chain_in_order(const Program& p, const std::vector<int>& order, const ValueTypes& types) {
  const int n = static_cast<int>(p.steps.size());
  const std::vector<int> producer = producers(p);
  std::vector<char> state(n, 0);  // 1: on the walk's stack, 2: run
  std::vector<std::vector<int>> waits(n);
  std::vector<int> runs;
  size_t next = 0;  // the first step of `order` not run yet
  auto run = [&](int s) {
    state[s] = 2;
    runs.push_back(s);
    while (next < order.size() && state[order[next]] == 2) {
      ++next;
    }
  };
  std::vector<std::pair<int, size_t>> stack;
  for (int o : p.outputs) {
    const int root = producer[o];
    if (root < 0 || state[root]) {
      continue;
    }
    state[root] = 1;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [s, next_input] = stack.back();
      const auto& ins = p.steps[s].inputs;
      if (next_input < ins.size()) {
        const int c = producer[ins[next_input++]];
        if (c >= 0 && state[c] == 0) {
          state[c] = 1;
          stack.push_back({c, 0});
        }
        continue;
      }
      const int b = s;
      stack.pop_back();
      std::vector<int> early;
      while (!ins.empty() && next < order.size() && order[next] != b && state[order[next]] == 0) {
        early.push_back(order[next]);
        run(order[next]);
      }
      // b waits for those no later one reads (the walk reaches the others through them), so
      // the Depends holds no output that would have died before b.
      for (size_t i = 0; i < early.size(); ++i) {
        const ProgramStep& a = p.steps[early[i]];
        const int end = a.first_output + static_cast<int>(a.shapes.size());
        bool read_later = false;
        for (size_t j = i + 1; j < early.size() && !read_later; ++j) {
          for (int in : p.steps[early[j]].inputs) {
            read_later = read_later || (in >= a.first_output && in < end);
          }
        }
        if (!read_later) {
          waits[b].push_back(early[i]);
        }
      }
      run(b);
    }
  }
  Program out = p;
  out.steps.clear();
  for (int s : runs) {
    ProgramStep step = p.steps[s];
    if (!waits[s].empty()) {
      const int held = step.inputs.back();
      std::vector<int> deps{held};
      for (int a : waits[s]) {
        deps.push_back(p.steps[a].first_output);
      }
      const int v = static_cast<int>(out.num_values++);
      out.steps.push_back({std::make_shared<Depends>(step.primitive->stream(), 1),
                           std::move(deps),
                           {types.shapes[held]},
                           {types.dtypes[held]},
                           v});
      step.inputs.back() = v;
    }
    out.steps.push_back(std::move(step));
  }
  return out;
}

namespace {

bool one_stream(const Program& p) {
  for (auto& step : p.steps) {
    if (!(step.primitive->stream() == p.steps[0].primitive->stream())) {
      return false;
    }
  }
  return true;
}

}  // namespace

Program schedule_for_memory(const Program& program, const std::vector<array>& inputs) {
  if (program.steps.size() < 2 || !one_stream(program)) {
    return program;
  }
  return chain_in_order(program, memory_schedule(program), ValueTypes(program, inputs));
}

}  // namespace mlx::core::detail
