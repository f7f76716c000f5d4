#include "mlx/export/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace mlx::core::detail {

namespace {

struct Graph {
  std::vector<int> producer;               // value -> step (-1: input or constant)
  std::vector<std::vector<int>> children;  // step -> producing steps of its inputs, unique
  std::vector<uint64_t> bytes;             // step -> bytes of its outputs
};

uint64_t nbytes_of(const Shape& shape, Dtype dtype) {
  uint64_t n = size_of(dtype);
  for (int d : shape) {
    n *= static_cast<uint64_t>(std::max(d, 0));
  }
  return n;
}

Graph graph_of(const Program& p) {
  Graph g;
  g.producer.assign(p.num_values, -1);
  g.children.resize(p.steps.size());
  g.bytes.resize(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    auto& step = p.steps[s];
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      g.producer[step.first_output + k] = static_cast<int>(s);
      g.bytes[s] += nbytes_of(step.shapes[k], step.dtypes[k]);
    }
    for (int in : step.inputs) {
      int c = g.producer[in];
      if (c >= 0 &&
          std::find(g.children[s].begin(), g.children[s].end(), c) == g.children[s].end()) {
        g.children[s].push_back(c);
      }
    }
  }
  return g;
}

// Post-order from the outputs, children of each step visited in `child_order(step)`.
template <class ChildOrder>
std::vector<int> post_order(const Program& p, const Graph& g, ChildOrder child_order) {
  std::vector<char> seen(p.steps.size(), 0);
  std::vector<int> order;
  struct Frame {
    int step;
    std::vector<int> kids;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  auto visit = [&](int root) {
    if (root < 0 || seen[root]) {
      return;
    }
    seen[root] = 1;
    stack.push_back({root, child_order(root)});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.kids.size()) {
        int c = top.kids[top.next++];
        if (!seen[c]) {
          seen[c] = 1;
          stack.push_back({c, child_order(c)});
        }
        continue;
      }
      order.push_back(top.step);
      stack.pop_back();
    }
  };
  for (int o : p.outputs) {
    visit(g.producer[o]);
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    visit(static_cast<int>(s));
  }
  return order;
}

}  // namespace

std::vector<int> plan_memory_order(const Program& p) {
  Graph g = graph_of(p);
  // How many steps consume each step's outputs: a shared subgraph is computed once, so for
  // its consumers it counts as its result only (else every residual stream would carry the
  // peak of everything before it into each comparison).
  std::vector<int> consumers(p.steps.size(), 0);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    for (int c : g.children[s]) {
      ++consumers[c];
    }
  }
  // Estimated peak of each step's subgraph, treating it as a tree.
  std::vector<uint64_t> peak(p.steps.size(), 0);
  std::vector<std::vector<int>> sorted(p.steps.size());
  auto child_peak = [&](int c) { return consumers[c] > 1 ? g.bytes[c] : peak[c]; };
  for (size_t s = 0; s < p.steps.size(); ++s) {
    auto kids = g.children[s];
    std::stable_sort(kids.begin(), kids.end(), [&](int a, int b) {
      return static_cast<int64_t>(child_peak(a) - g.bytes[a]) >
             static_cast<int64_t>(child_peak(b) - g.bytes[b]);
    });
    uint64_t running = 0, pk = 0;
    for (int c : kids) {
      pk = std::max(pk, running + child_peak(c));
      running += g.bytes[c];
    }
    peak[s] = std::max(pk, running + g.bytes[s]);
    sorted[s] = std::move(kids);
  }
  return post_order(p, g, [&](int s) { return sorted[s]; });
}

std::vector<int> eval_order(const Program& p) {
  Graph g = graph_of(p);
  return post_order(p, g, [&](int s) {
    std::vector<int> kids;
    for (int in : p.steps[s].inputs) {
      int c = g.producer[in];
      if (c >= 0) {
        kids.push_back(c);
      }
    }
    return kids;
  });
}

uint64_t planned_peak_bytes(const Program& p, const std::vector<int>& order) {
  Graph g = graph_of(p);
  std::vector<int> last_use(p.num_values, -1);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    for (int in : p.steps[order[pos]].inputs) {
      last_use[in] = static_cast<int>(pos);
    }
  }
  for (int o : p.outputs) {
    last_use[o] = static_cast<int>(order.size());
  }
  uint64_t live = 0, peak = 0;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    auto& step = p.steps[order[pos]];
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      live += nbytes_of(step.shapes[k], step.dtypes[k]);
    }
    peak = std::max(peak, live);
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      if (last_use[step.first_output + k] < 0) {
        live -= nbytes_of(step.shapes[k], step.dtypes[k]);
      }
    }
    for (int in : step.inputs) {
      int prod = g.producer[in];
      if (prod >= 0 && last_use[in] == static_cast<int>(pos)) {
        last_use[in] = -2;  // freed once
        auto& ps = p.steps[prod];
        live -= nbytes_of(ps.shapes[in - ps.first_output], ps.dtypes[in - ps.first_output]);
      }
    }
  }
  return peak;
}

}  // namespace mlx::core::detail
