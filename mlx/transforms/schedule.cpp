#include "mlx/transforms/schedule.h"

#include <algorithm>

#include "mlx/export/memory_plan.h"
#include "mlx/memory/caching_allocator.h"
#include "mlx/primitives/transform.h"

namespace mlx::core::detail {

namespace {

int64_t rounded_bytes(const Shape& shape, Dtype dtype) {
  size_t n = size_of(dtype);
  for (int d : shape) {
    n *= static_cast<size_t>(std::max(d, 0));
  }
  return static_cast<int64_t>(allocator::CachingAllocator::round_size(n));
}

// The greedy list schedule: repeatedly run, of the steps whose inputs are computed, the one
// that frees the most bytes net of what it allocates (ties: the earlier in eval's order).
// Buffers are tracked as eval keeps them: a view shares its input's; inputs, constants and
// outputs are never freed.
std::vector<int> greedy_order(const Program& p) {
  const int n = static_cast<int>(p.steps.size());
  std::vector<int> producer(p.num_values, -1), root(p.num_values);
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
      producer[v] = s;
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

// `p` with its steps stored in `order`, each step whose predecessor there computes none of
// its inputs waiting for it through a Depends node on its first input: eval's depth-first
// walk then runs them in that order.
Program chain(const Program& p, const std::vector<int>& order, const std::vector<array>& inputs) {
  ValueTypes types(p, inputs);
  Program out = p;
  out.steps.clear();
  for (size_t k = 0; k < order.size(); ++k) {
    ProgramStep step = p.steps[order[k]];
    if (k > 0 && !step.inputs.empty()) {
      const ProgramStep& prev = p.steps[order[k - 1]];
      const int prev_end = prev.first_output + static_cast<int>(prev.shapes.size());
      bool reads_prev = std::any_of(step.inputs.begin(), step.inputs.end(), [&](int in) {
        return in >= prev.first_output && in < prev_end;
      });
      if (!reads_prev) {
        const int held = step.inputs[0];
        const int v = static_cast<int>(out.num_values++);
        out.steps.push_back({std::make_shared<Depends>(step.primitive->stream(), 1),
                             {held, prev.first_output},
                             {types.shapes[held]},
                             {types.dtypes[held]},
                             v});
        step.inputs[0] = v;
      }
    }
    out.steps.push_back(std::move(step));
  }
  return out;
}

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
  return chain(program, greedy_order(program), inputs);
}

}  // namespace mlx::core::detail
