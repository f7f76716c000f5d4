#include "mlx/export/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_set>

#include "mlx/backend/common/views.h"
#include "mlx/memory/caching_allocator.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/shape.h"
#include "mlx/utils.h"

namespace mlx::core::detail {

uint64_t nbytes_of(const Shape& shape, Dtype dtype) {
  uint64_t n = size_of(dtype);
  for (int d : shape) {
    n *= static_cast<uint64_t>(std::max(d, 0));
  }
  return n;
}

namespace {

struct Graph {
  std::vector<int> producer;               // value -> step (-1: input or constant)
  std::vector<std::vector<int>> children;  // step -> producing steps of its inputs, unique
  std::vector<uint64_t> bytes;             // step -> bytes of its outputs
};

Graph graph_of(const Program& p) {
  Graph g;
  g.producer = producers(p);
  g.children.resize(p.steps.size());
  g.bytes.resize(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    auto& step = p.steps[s];
    for (size_t k = 0; k < step.shapes.size(); ++k) {
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

// Post-order from the outputs, children of each step visited in `child_order(step)`; with
// `all_steps`, then from the steps the outputs do not need.
template <class ChildOrder>
std::vector<int> post_order(const Program& p, const Graph& g, ChildOrder child_order,
                            bool all_steps = true) {
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
  for (size_t s = 0; all_steps && s < p.steps.size(); ++s) {
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

namespace {

std::vector<int> eval_walk(const Program& p, bool all_steps) {
  Graph g = graph_of(p);
  auto inputs_in_order = [&](int s) {
    std::vector<int> kids;
    for (int in : p.steps[s].inputs) {
      int c = g.producer[in];
      if (c >= 0) {
        kids.push_back(c);
      }
    }
    return kids;
  };
  return post_order(p, g, inputs_in_order, all_steps);
}

}  // namespace

std::vector<int> eval_order(const Program& p) { return eval_walk(p, true); }

std::vector<int> needed_steps(const Program& p) { return eval_walk(p, false); }

uint64_t planned_peak_bytes(const Program& p, const std::vector<int>& order) {
  return simulate_memory(p, {}, order).peak_bytes;
}

namespace {

// How a step's kernel gets its outputs' memory on the host: a view of its first input, an
// input buffer dying with it (any input; the first only), or a new block.
enum class OutputKind { view, donating, donating_first, fresh };

OutputKind output_kind(const Primitive& prim) {
  static const std::unordered_set<std::string> views = {
      "Broadcast",  "DynamicBroadcast", "Transpose",    "Slice",   "Split",
      "AsStrided",  "Diagonal",         "StopGradient", "Depends", "SqueezeAxes",
      "ExpandAxes", "Reshape",          "Copy",         "View",    "CustomTransforms"};
  static const std::unordered_set<std::string> donating = {"Compiled"};
  std::string name = prim.name();
  if (views.count(name)) {
    return OutputKind::view;
  }
  if (donating.count(name) || dynamic_cast<const Unary*>(&prim) ||
      dynamic_cast<const Binary*>(&prim)) {
    return OutputKind::donating;
  }
  return name == "CrossEntropyVJP" ? OutputKind::donating_first : OutputKind::fresh;
}

// The strides of a view step's output, where they follow from its input's (nullopt: not
// followed, treated as a layout a reshape must copy).
std::optional<Strides> view_strides(const Primitive& prim, const Shape& in_shape,
                                    const std::optional<Strides>& in, const Shape& out_shape) {
  if (!in) {
    return std::nullopt;
  }
  const std::string name = prim.name();
  if (name == "Reshape" || name == "ExpandAxes" || name == "SqueezeAxes") {
    return reshape_strides(in_shape, *in, out_shape);
  }
  if (auto* t = dynamic_cast<const Transpose*>(&prim)) {
    Strides out;
    for (int axis : t->axes()) {
      out.push_back((*in)[axis]);
    }
    return out;
  }
  if (auto* sl = dynamic_cast<const Slice*>(&prim)) {
    Strides out = *in;
    for (size_t i = 0; i < out.size() && i < sl->strides().size(); ++i) {
      out[i] *= sl->strides()[i];
    }
    return out;
  }
  if (name == "Split" || name == "Depends" || name == "StopGradient" || name == "Copy" ||
      name == "CustomTransforms") {
    return in;
  }
  return std::nullopt;
}

std::string describe(const Program& p, int s) {
  std::ostringstream os;
  auto& st = p.steps[s];
  os << st.primitive->name() << " " << st.shapes[0] << " " << st.dtypes[0] << " (step " << s << ")";
  return os.str();
}

}  // namespace

bool is_view_step(const Primitive& primitive) { return output_kind(primitive) == OutputKind::view; }

MemoryPlan simulate_memory(const Program& p, const std::vector<array>& inputs,
                           const std::vector<int>& order, PeakSite* peak) {
  Graph g = graph_of(p);
  const int nv = static_cast<int>(p.num_values);
  std::vector<int> last_use(nv, -1);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    for (int in : p.steps[order[pos]].inputs) {
      last_use[in] = static_cast<int>(pos);
    }
  }
  for (int o : p.outputs) {
    last_use[o] = static_cast<int>(order.size());
  }
  // Buffers: size and how many live values view them; value -> buffer (-1: held outside).
  std::vector<uint64_t> size;
  std::vector<int> refs, owner;
  std::vector<int> buffer_of(nv, -1);
  std::vector<char> dense(nv, 1), scalar(nv, 0);
  std::vector<uint64_t> nbytes(nv, 0);
  std::vector<Shape> shape(nv);
  std::vector<std::optional<Strides>> strides(nv);  // known layouts (views follow them)
  MemoryPlan plan;
  std::unordered_set<const void*> seen;
  for (size_t i = 0; i < inputs.size() && i < p.num_inputs; ++i) {
    const array& a = inputs[i];
    const void* key =
        a.buffer_size() ? static_cast<const void*>(a.data<char>() - a.offset()) : nullptr;
    if (!key || seen.insert(key).second) {
      plan.input_bytes +=
          a.buffer_size() ? a.buffer_size() : allocator::CachingAllocator::round_size(a.nbytes());
    }
    nbytes[i] = a.nbytes();
    scalar[i] = a.size() == 1;
    shape[i] = a.shape();
    strides[i] = a.flags().row_contiguous ? row_major_strides(a.shape()) : a.strides();
  }
  for (auto& [index, c] : p.constants) {
    plan.input_bytes += c.nbytes();
    nbytes[index] = c.nbytes();
    scalar[index] = c.size() == 1;
    shape[index] = c.shape();
    strides[index] = row_major_strides(c.shape());
  }
  uint64_t live = plan.input_bytes;
  plan.peak_bytes = live;
  // Each buffer's positions in `order`: allocated at born, freed after the step at died.
  std::vector<int> born, died;
  int peak_position = -1;
  std::vector<std::pair<int, int>> reused;  // (step, the step whose buffer it writes)
  int pos_now = 0;
  auto release = [&](int v) {
    int b = buffer_of[v];
    if (b >= 0 && --refs[b] == 0) {
      live -= size[b];
      died[b] = pos_now;
    }
  };
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const int s = order[pos];
    pos_now = static_cast<int>(pos);
    auto& st = p.steps[s];
    OutputKind kind = output_kind(*st.primitive);
    std::string pname = st.primitive->name();
    // Copies what is not row-contiguous; a reshape only where no strides express it.
    if (kind == OutputKind::view && !dense[st.inputs[0]] &&
        (pname == "Copy" ||
         (pname == "Reshape" && !view_strides(*st.primitive, shape[st.inputs[0]],
                                              strides[st.inputs[0]], st.shapes[0])))) {
      kind = OutputKind::fresh;
    }
    std::vector<char> donated(st.inputs.size(), 0);
    for (size_t k = 0; k < st.shapes.size(); ++k) {
      const int v = st.first_output + static_cast<int>(k);
      nbytes[v] = nbytes_of(st.shapes[k], st.dtypes[k]);
      uint64_t elements = nbytes[v] / size_of(st.dtypes[k]);
      scalar[v] = elements == 1;
      shape[v] = st.shapes[k];
      if (kind == OutputKind::view && !st.inputs.empty()) {
        int in = st.inputs[0];
        strides[v] = view_strides(*st.primitive, shape[in], strides[in], st.shapes[k]);
        buffer_of[v] = buffer_of[in];
        if (buffer_of[v] >= 0) {
          ++refs[buffer_of[v]];
        }
        std::string name = st.primitive->name();
        dense[v] = dense[in] && (name == "Reshape" || name == "Copy" || name == "StopGradient" ||
                                 name == "Depends" || name == "SqueezeAxes" ||
                                 name == "ExpandAxes" || scalar[in]);
        scalar[v] = scalar[in];
        continue;
      }
      strides[v] = row_major_strides(st.shapes[k]);
      int donor = -1;
      if (kind == OutputKind::donating || kind == OutputKind::donating_first) {
        // Binary's dense paths need every operand dense or a broadcast scalar.
        bool all_dense = true;
        for (size_t j = 0; kind == OutputKind::donating && j < st.inputs.size(); ++j) {
          all_dense = all_dense && (dense[st.inputs[j]] || scalar[st.inputs[j]]);
        }
        const size_t candidates = kind == OutputKind::donating ? st.inputs.size() : 1;
        for (size_t j = 0; j < candidates && donor < 0; ++j) {
          int in = st.inputs[j];
          int b = buffer_of[in];
          bool ok = b >= 0 && !donated[j] && refs[b] == 1 && dense[in] && !scalar[in] &&
                    last_use[in] == static_cast<int>(pos) && nbytes[in] == nbytes[v] &&
                    size_of(st.dtypes[k]) * elements == nbytes[in] &&
                    (st.primitive->name() == std::string("Compiled") || all_dense);
          if (ok && g.producer[in] >= 0) {
            auto& ps = p.steps[g.producer[in]];
            ok = size_of(ps.dtypes[in - ps.first_output]) == size_of(st.dtypes[k]);
          }
          if (ok) {
            donor = in;
            donated[j] = 1;
          }
        }
      }
      if (donor >= 0) {
        buffer_of[v] = buffer_of[donor];
        ++refs[buffer_of[v]];
        reused.emplace_back(s, g.producer[donor]);
        continue;
      }
      buffer_of[v] = static_cast<int>(size.size());
      size.push_back(allocator::CachingAllocator::round_size(nbytes[v]));
      refs.push_back(1);
      owner.push_back(s);
      born.push_back(static_cast<int>(pos));
      died.push_back(std::numeric_limits<int>::max());
      live += size.back();
      ++plan.num_allocations;
      plan.allocated_bytes += size.back();
    }
    if (live > plan.peak_bytes) {
      plan.peak_bytes = live;
      peak_position = static_cast<int>(pos);
    }
    for (size_t k = 0; k < st.shapes.size(); ++k) {
      if (last_use[st.first_output + k] < 0) {
        release(st.first_output + static_cast<int>(k));
      }
    }
    std::vector<int> done;
    for (int in : st.inputs) {
      if (last_use[in] == static_cast<int>(pos) &&
          std::find(done.begin(), done.end(), in) == done.end()) {
        done.push_back(in);
        release(in);
      }
    }
  }
  for (auto& [step, from] : reused) {
    plan.reused_in_place.emplace_back(describe(p, step), describe(p, from));
  }
  if (peak_position < 0) {
    return plan;
  }
  plan.peak_step = describe(p, order[peak_position]);
  std::vector<std::pair<uint64_t, int>> alive;
  for (size_t b = 0; b < size.size(); ++b) {
    if (born[b] <= peak_position && died[b] >= peak_position) {
      alive.emplace_back(size[b], owner[b]);
    }
  }
  std::sort(alive.rbegin(), alive.rend());
  for (auto& [bytes, step] : alive) {
    plan.live_at_peak.push_back(describe(p, step));
    plan.live_bytes_at_peak.push_back(bytes);
  }
  if (peak) {
    peak->position = peak_position;
    peak->live_steps.clear();
    for (auto& [bytes, step] : alive) {
      peak->live_steps.push_back(step);
    }
  }
  return plan;
}

}  // namespace mlx::core::detail
