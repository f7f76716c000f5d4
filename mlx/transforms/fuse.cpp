#include "mlx/transforms/fuse.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <queue>
#include <sstream>
#include <stdexcept>

#include "mlx/primitives/compiled.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"
#include "mlx/primitives/transform.h"
#include "mlx/utils.h"

namespace mlx::core::detail {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] != '\0' && v[0] != '0';
}

std::atomic<bool>& fusion_flag() {
  static std::atomic<bool> on{!env_flag("MLX_DISABLE_FUSION")};
  return on;
}

// GPU regions too (backend/cuda/compiled.cu generates their kernels); MLX_COMPILE_FUSE_GPU=0
// leaves them unfused.
bool fuse_on(const Stream& s) {
  static const bool gpu = [] {
    const char* v = std::getenv("MLX_COMPILE_FUSE_GPU");
    return v == nullptr || env_flag("MLX_COMPILE_FUSE_GPU");
  }();
  return s.device.type == Device::cpu || gpu;
}

// The FusedOp a step becomes, or nullopt when it is not elementwise.
std::optional<FusedOp> fused_op_of(const ProgramStep& step) {
  if (step.shapes.size() != 1 || !fuse_on(step.primitive->stream())) {
    return std::nullopt;
  }
  Primitive* p = step.primitive.get();
  FusedOp op{FusedOp::Kind::unary, 0, step.dtypes[0]};
  if (auto* u = dynamic_cast<Unary*>(p)) {
    op.code = static_cast<int>(u->op());
  } else if (auto* b = dynamic_cast<Binary*>(p)) {
    op.kind = FusedOp::Kind::binary;
    op.code = static_cast<int>(b->op());
  } else if (dynamic_cast<Select*>(p)) {
    op.kind = FusedOp::Kind::select;
  } else if (dynamic_cast<AsType*>(p)) {
    op.kind = FusedOp::Kind::cast;
  } else {
    return std::nullopt;
  }
  return op;
}

struct Region {
  std::vector<int> members;  // step indices, ascending (the reduction step included)
  Shape shape;
  Stream stream;
  int reduction = -1;  // the Reduce step attached as the region's epilogue
};

class Fuser {
 public:
  Fuser(const Program& p, bool shapeless) : p_(p), shapeless_(shapeless), producer_(producers(p)) {
    region_of_.assign(p.steps.size(), -1);
    stamp_.assign(p.steps.size(), 0);
    operands_.resize(p.steps.size());
  }

  Program run() {
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      place(static_cast<int>(s));
    }
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      attach_reduction(static_cast<int>(s));
    }
    return emit();
  }

 private:
  Dtype dtype_of(int v) const {
    int s = producer_[v];
    if (s >= 0) {
      return p_.steps[s].dtypes[v - p_.steps[s].first_output];
    }
    if (v < static_cast<int>(p_.num_inputs)) {
      return p_.input_dtypes[v];
    }
    for (auto& [index, c] : p_.constants) {
      if (index == v) {
        return c.dtype();
      }
    }
    throw std::logic_error("[compile] A value of the program has no producer.");
  }

  const Shape& shape_of(int v) const {
    int s = producer_[v];
    return p_.steps[s].shapes[v - p_.steps[s].first_output];
  }

  // The broadcast view a region reads through: a Broadcast (a DynamicBroadcast when shapeless)
  // to `shape`, whose other inputs (shapeless) only lend shapes that `others` already cover.
  int through_broadcasts(int v, const Shape& shape) const {
    while (v >= 0 && producer_[v] >= 0) {
      const ProgramStep& st = p_.steps[producer_[v]];
      Primitive* prim = st.primitive.get();
      bool view = shapeless_ ? dynamic_cast<DynamicBroadcast*>(prim) != nullptr
                             : dynamic_cast<Broadcast*>(prim) != nullptr;
      if (!view || st.shapes[0] != shape) {
        break;
      }
      v = st.inputs[0];
    }
    return v;
  }

  // The operands step s reads in a region (broadcast views resolved), or its own inputs when
  // a shapeless broadcast lends a shape that no operand carries.
  std::vector<int> resolve_operands(int s) const {
    const ProgramStep& st = p_.steps[s];
    std::vector<int> ops;
    for (int in : st.inputs) {
      ops.push_back(through_broadcasts(in, st.shapes[0]));
    }
    if (shapeless_) {
      for (int in : st.inputs) {
        int prod = producer_[in];
        if (prod < 0 || !dynamic_cast<DynamicBroadcast*>(p_.steps[prod].primitive.get())) {
          continue;
        }
        for (size_t k = 1; k < p_.steps[prod].inputs.size(); ++k) {
          int lender = through_broadcasts(p_.steps[prod].inputs[k], st.shapes[0]);
          if (std::find(ops.begin(), ops.end(), lender) == ops.end()) {
            return st.inputs;
          }
        }
      }
    }
    return ops;
  }

  // What the step reads once fused (resolved operands) or not (its inputs).
  const std::vector<int>& reads(int s) const {
    return region_of_[s] >= 0 ? operands_[s] : p_.steps[s].inputs;
  }

  // Whether fusing `regions` and step s into one node makes the graph cyclic: some operand
  // outside the merged set depends on it.
  bool would_cycle(const std::vector<int>& regions, int s) {
    ++generation_;
    std::vector<int> inside = {s};
    for (int r : regions) {
      inside.insert(inside.end(), regions_[r].members.begin(), regions_[r].members.end());
    }
    const uint64_t mark_in = ++generation_;
    for (int m : inside) {
      stamp_[m] = mark_in;
    }
    const uint64_t mark_seen = ++generation_;
    std::vector<int> stack;
    auto push_reads = [&](int step) {
      for (int v : (step == s ? operands_[s] : reads(step))) {
        int prod = producer_[v];
        if (prod >= 0 && stamp_[prod] != mark_in) {
          stack.push_back(prod);
        }
      }
    };
    for (int m : inside) {
      push_reads(m);
    }
    while (!stack.empty()) {
      int q = stack.back();
      stack.pop_back();
      if (stamp_[q] == mark_in) {
        return true;
      }
      if (stamp_[q] == mark_seen) {
        continue;
      }
      stamp_[q] = mark_seen;
      if (region_of_[q] >= 0) {
        for (int m : regions_[region_of_[q]].members) {
          stamp_[m] = mark_seen;
          for (int v : reads(m)) {
            int prod = producer_[v];
            if (prod >= 0) {
              stack.push_back(prod);
            }
          }
        }
      } else {
        for (int v : reads(q)) {
          if (producer_[v] >= 0) {
            stack.push_back(producer_[v]);
          }
        }
      }
    }
    return false;
  }

  void join(int r, int s) {
    region_of_[s] = r;
    regions_[r].members.push_back(s);
  }

  void merge_into(int keep, int other) {
    for (int m : regions_[other].members) {
      region_of_[m] = keep;
    }
    auto& km = regions_[keep].members;
    km.insert(km.end(), regions_[other].members.begin(), regions_[other].members.end());
    std::sort(km.begin(), km.end());
    regions_[other].members.clear();
  }

  // Puts step s in a region: with every region it reads from when that keeps the graph
  // acyclic, else with the first such region that does, else in a new one.
  void place(int s) {
    const ProgramStep& st = p_.steps[s];
    auto op = fused_op_of(st);
    if (!op) {
      return;
    }
    operands_[s] = resolve_operands(s);
    std::vector<int> candidates;
    for (int v : operands_[s]) {
      int prod = producer_[v];
      if (prod < 0 || region_of_[prod] < 0) {
        continue;
      }
      int r = region_of_[prod];
      const Region& reg = regions_[r];
      if (reg.shape == st.shapes[0] && reg.stream == st.primitive->stream() &&
          std::find(candidates.begin(), candidates.end(), r) == candidates.end()) {
        candidates.push_back(r);
      }
    }
    if (candidates.size() > 1 && !would_cycle(candidates, s)) {
      for (size_t k = 1; k < candidates.size(); ++k) {
        merge_into(candidates[0], candidates[k]);
      }
      join(candidates[0], s);
      return;
    }
    for (int r : candidates) {
      if (!would_cycle({r}, s)) {
        join(r, s);
        return;
      }
    }
    regions_.push_back({{}, st.shapes[0], st.primitive->stream()});
    join(static_cast<int>(regions_.size()) - 1, s);
  }

  // A float32 Sum / Max / Min over the trailing axes of a region value joins the region as its
  // epilogue (one per region): the value is reduced as it is computed. Regions only read values
  // placed before, so no member reads the reduction's result. Both backends generate the
  // epilogue (backend/cpu/compiled_jit.cpp, backend/cuda/compiled.cu).
  void attach_reduction(int s) {
    const ProgramStep& st = p_.steps[s];
    auto* reduce = dynamic_cast<Reduce*>(st.primitive.get());
    if (!reduce || !fuse_on(st.primitive->stream()) || st.dtypes[0] != float32) {
      return;
    }
    auto type = reduce->type();
    if (type != Reduce::Sum && type != Reduce::Max && type != Reduce::Min) {
      return;
    }
    int v = st.inputs[0];
    int prod = producer_[v];
    if (prod < 0 || region_of_[prod] < 0 || dtype_of(v) != float32) {
      return;
    }
    Region& reg = regions_[region_of_[prod]];
    std::vector<int> axes = reduce->axes();
    std::sort(axes.begin(), axes.end());
    const int nd = static_cast<int>(reg.shape.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axes[k] != nd - static_cast<int>(axes.size()) + static_cast<int>(k)) {
        return;  // not a row reduction
      }
    }
    if (reg.reduction >= 0 || reg.shape != shape_of(v) || axes.empty()) {
      return;
    }
    reg.reduction = s;
    region_of_[s] = region_of_[prod];
    operands_[s] = st.inputs;
    reg.members.insert(std::upper_bound(reg.members.begin(), reg.members.end(), s), s);
  }

  Program emit();

  const Program& p_;
  bool shapeless_;
  const std::vector<int> producer_;  // value -> the step computing it, or -1
  std::vector<int> region_of_;
  std::vector<std::vector<int>> operands_;  // resolved operands of fused steps
  std::vector<Region> regions_;
  std::vector<uint64_t> stamp_;
  uint64_t generation_ = 0;
};

Program Fuser::emit() {
  // Regions of one op (and no reduction) stay ordinary steps reading their own inputs.
  for (auto& reg : regions_) {
    if (reg.members.size() == 1) {
      region_of_[reg.members[0]] = -1;
      reg.members.clear();
    }
  }
  // Nodes of the contracted graph: plain steps, then regions.
  const int nsteps = static_cast<int>(p_.steps.size());
  std::vector<int> node_of(nsteps);
  std::vector<std::vector<int>> node_steps;
  std::vector<int> region_node(regions_.size(), -1);
  for (int s = 0; s < nsteps; ++s) {
    int r = region_of_[s];
    if (r < 0) {
      node_of[s] = static_cast<int>(node_steps.size());
      node_steps.push_back({s});
    } else {
      if (region_node[r] < 0) {
        region_node[r] = static_cast<int>(node_steps.size());
        node_steps.push_back(regions_[r].members);
      }
      node_of[s] = region_node[r];
    }
  }
  const int nnodes = static_cast<int>(node_steps.size());
  // Kahn's order, earliest original position first.
  std::vector<std::vector<int>> consumers(nnodes);
  std::vector<int> pending(nnodes, 0);
  for (int n = 0; n < nnodes; ++n) {
    std::vector<int> deps;
    for (int s : node_steps[n]) {
      for (int v : reads(s)) {
        int prod = producer_[v];
        if (prod >= 0 && node_of[prod] != n &&
            std::find(deps.begin(), deps.end(), node_of[prod]) == deps.end()) {
          deps.push_back(node_of[prod]);
        }
      }
    }
    pending[n] = static_cast<int>(deps.size());
    for (int d : deps) {
      consumers[d].push_back(n);
    }
  }
  using Item = std::pair<int, int>;  // (position, node)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (int n = 0; n < nnodes; ++n) {
    if (pending[n] == 0) {
      ready.push({node_steps[n].back(), n});
    }
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int n = ready.top().second;
    ready.pop();
    order.push_back(n);
    for (int c : consumers[n]) {
      if (--pending[c] == 0) {
        ready.push({node_steps[c].back(), c});
      }
    }
  }
  // Liveness, consumers first: dead views (absorbed by regions) drop out.
  std::vector<char> needed(p_.num_values, 0), live(nnodes, 0);
  for (int o : p_.outputs) {
    needed[o] = 1;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int n = *it;
    for (int s : node_steps[n]) {
      auto& st = p_.steps[s];
      for (size_t k = 0; k < st.shapes.size(); ++k) {
        live[n] = live[n] || needed[st.first_output + k];
      }
    }
    if (live[n]) {
      for (int s : node_steps[n]) {
        for (int v : reads(s)) {
          if (producer_[v] < 0 || node_of[producer_[v]] != n) {
            needed[v] = 1;
          }
        }
      }
    }
  }

  Program out;
  out.num_inputs = p_.num_inputs;
  out.constants = p_.constants;
  int next = static_cast<int>(p_.num_values);
  std::vector<int> remap(p_.num_values);
  for (int v = 0; v < static_cast<int>(p_.num_values); ++v) {
    remap[v] = v;
  }
  static const bool debug = env_flag("MLX_COMPILE_DEBUG");
  for (int n : order) {
    if (!live[n]) {
      continue;
    }
    if (node_steps[n].size() == 1 && region_of_[node_steps[n][0]] < 0) {
      ProgramStep st = p_.steps[node_steps[n][0]];
      for (int& in : st.inputs) {
        in = remap[in];
      }
      out.steps.push_back(std::move(st));
      continue;
    }
    // A region: its inputs in order of first use, its ops in program order.
    std::vector<int> local(p_.num_values, -1);
    std::vector<int> inputs;
    std::vector<Dtype> in_dtypes;
    const auto& members = node_steps[n];
    for (int s : members) {
      for (int v : operands_[s]) {
        if ((producer_[v] < 0 || node_of[producer_[v]] != n) && local[v] < 0) {
          local[v] = static_cast<int>(inputs.size());
          inputs.push_back(remap[v]);
          in_dtypes.push_back(dtype_of(v));
        }
      }
    }
    const Region& reg = regions_[region_of_[members[0]]];
    std::vector<FusedOp> ops;
    std::vector<int> outputs, produced;
    for (int s : members) {
      if (s == reg.reduction) {
        continue;
      }
      FusedOp op = *fused_op_of(p_.steps[s]);
      for (size_t a = 0; a < operands_[s].size(); ++a) {
        op.args[a] = local[operands_[s][a]];
      }
      int v = p_.steps[s].first_output;
      local[v] = static_cast<int>(inputs.size() + ops.size());
      ops.push_back(op);
      if (needed[v]) {
        outputs.push_back(local[v]);
        produced.push_back(v);
      }
    }
    FusedReduction reduction;
    if (reg.reduction >= 0) {
      auto& r = static_cast<Reduce&>(*p_.steps[reg.reduction].primitive);
      reduction.type = r.type();
      reduction.value = local[p_.steps[reg.reduction].inputs[0]];
      reduction.axes = r.axes();
      std::sort(reduction.axes.begin(), reduction.axes.end());
      produced.push_back(p_.steps[reg.reduction].first_output);
    }
    auto prim = std::make_shared<Compiled>(reg.stream, std::move(in_dtypes), std::move(ops),
                                           std::move(outputs), std::move(reduction));
    if (debug) {
      std::cerr << "[compile] fused region of " << prim->ops().size() << " ops over shape "
                << reg.shape << " (" << prim->num_inputs() << " inputs, "
                << prim->output_values().size() << " outputs):\n"
                << prim->code();
    }
    ProgramStep step{prim, inputs, {}, {}, next};
    for (int v : produced) {
      step.shapes.push_back(shape_of(v));
      step.dtypes.push_back(dtype_of(v));
      remap[v] = next++;
    }
    out.steps.push_back(std::move(step));
  }
  for (int o : p_.outputs) {
    out.outputs.push_back(remap[o]);
  }
  out.num_values = next;
  return out;
}

}  // namespace

Program fuse_elementwise(const Program& program, bool shapeless) {
  return Fuser(program, shapeless).run();
}

void set_fusion_enabled(bool enabled) { fusion_flag().store(enabled); }
bool fusion_enabled() { return fusion_flag().load(); }

}  // namespace mlx::core::detail
