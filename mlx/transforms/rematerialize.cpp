#include "mlx/transforms/rematerialize.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>

#include "mlx/export/memory_plan.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/transform.h"

namespace mlx::core::detail {

namespace {

// Steps worth running twice: elementwise kernels (fused regions included) and copies, as
// torch.compile's partitioner recomputes pointwise work but not reductions (a norm's output
// stays). Running one again costs a pass over its inputs and output, against keeping the
// output alive across the peak.
bool cheap_to_recompute(const ProgramStep& step) {
  if (step.shapes.size() != 1 || step.inputs.empty()) {
    return false;
  }
  const Primitive& p = *step.primitive;
  if (dynamic_cast<const Unary*>(&p) || dynamic_cast<const Binary*>(&p)) {
    return true;
  }
  const std::string name = p.name();
  return name == "Compiled" || name == "Reshape" || name == "Copy";
}

// The program's values: who computes each, and where each is read.
struct Uses {
  std::vector<int> producer;              // value -> step (-1: input or constant)
  std::vector<std::vector<int>> readers;  // value -> steps reading it
  std::vector<int> position;              // step -> position in the evaluation order
  std::vector<int> last_read;             // value -> last position reading it (-1: none)
  std::unordered_set<int> outputs;
  ValueTypes types;

  Uses(const Program& p, const std::vector<int>& order, const std::vector<array>& inputs)
      : producer(producers(p)),
        readers(p.num_values),
        position(p.steps.size(), -1),
        last_read(p.num_values, -1),
        outputs(p.outputs.begin(), p.outputs.end()),
        types(p, inputs) {
    for (size_t s = 0; s < p.steps.size(); ++s) {
      for (int in : p.steps[s].inputs) {
        if (readers[in].empty() || readers[in].back() != static_cast<int>(s)) {
          readers[in].push_back(static_cast<int>(s));
        }
      }
    }
    for (size_t i = 0; i < order.size(); ++i) {
      position[order[i]] = static_cast<int>(i);
      for (int in : p.steps[order[i]].inputs) {
        last_read[in] = static_cast<int>(i);
      }
    }
  }

  // Position of the step computing v (-1 for inputs and constants).
  int made_at(int v) const { return producer[v] < 0 ? -1 : position[producer[v]]; }

  // The last position reading v's buffer through v or the views v is made of.
  int read_until(const Program& p, int v) const {
    int last = last_read[v];
    while (producer[v] >= 0 && is_view_step(*p.steps[producer[v]].primitive)) {
      v = p.steps[producer[v]].inputs[0];
      last = std::max(last, last_read[v]);
    }
    return last;
  }
};

// A read of the step's output after the peak, possibly through views: `reader` reads
// `slot`, which is the output through the view steps `views` (first applied first).
struct LateRead {
  int reader;
  size_t slot;
  std::vector<int> views;
};

void find_late_reads(const Program& p, const Uses& u, int value, int peak, std::vector<int>& views,
                     std::vector<LateRead>& found) {
  for (int r : u.readers[value]) {
    auto& step = p.steps[r];
    if (is_view_step(*step.primitive) && step.inputs.size() == 1 && step.shapes.size() == 1) {
      views.push_back(r);
      find_late_reads(p, u, step.first_output, peak, views, found);
      views.pop_back();
      continue;
    }
    if (u.position[r] > peak) {
      for (size_t slot = 0; slot < step.inputs.size(); ++slot) {
        if (step.inputs[slot] == value) {
          found.push_back({r, slot, views});
        }
      }
    }
  }
}

// The steps the outputs need (a late read's view rewired to a copy leaves the original one
// unread), each after the steps computing its inputs.
void keep_needed_steps(Program& p) {
  std::vector<ProgramStep> needed;
  for (int s : needed_steps(p)) {
    needed.push_back(std::move(p.steps[s]));
  }
  p.steps = std::move(needed);
}

// `p` with the output of step `s` recomputed for its reads after position `peak`, or nothing
// where that cannot lower the peak (an input that dies before then, no late read, or no
// input of the first late reader computed after the peak to hold the copy back).
std::optional<Program> recompute_late(const Program& p, const Uses& u, int s, int peak) {
  const ProgramStep& step = p.steps[s];
  const int value = step.first_output;
  if (!cheap_to_recompute(step) || u.outputs.count(value)) {
    return std::nullopt;
  }
  // Its inputs are alive after the peak anyway, or small (a bias cast to bf16): the copy
  // keeps them no longer at a cost. A region that reduces (reads far more than it writes)
  // would pay a large read for a small saving.
  const ValueTypes& types = u.types;
  auto bytes = [&](int v) { return nbytes_of(types.shapes[v], types.dtypes[v]); };
  uint64_t read = 0;
  for (int in : step.inputs) {
    if (u.producer[in] >= 0 && u.read_until(p, in) <= peak && 16 * bytes(in) > bytes(value)) {
      return std::nullopt;
    }
    read += bytes(in);
  }
  if (read > 2 * bytes(value)) {
    return std::nullopt;
  }
  std::vector<int> views;
  std::vector<LateRead> late;
  find_late_reads(p, u, value, peak, views, late);
  if (late.empty()) {
    return std::nullopt;
  }
  // The first late reader's input computed last (after the peak) holds the copy back.
  auto first = std::min_element(late.begin(), late.end(), [&](auto& a, auto& b) {
    return u.position[a.reader] < u.position[b.reader];
  });
  int trigger = -1;
  for (int in : p.steps[first->reader].inputs) {
    if (u.made_at(in) > peak && (trigger < 0 || u.made_at(in) > u.made_at(trigger))) {
      trigger = in;
    }
  }
  if (trigger < 0) {
    return std::nullopt;
  }
  Program out = p;
  auto add = [&](std::shared_ptr<Primitive> prim, std::vector<int> ins, Shape shape, Dtype dtype) {
    int v = static_cast<int>(out.num_values++);
    out.steps.push_back({std::move(prim), std::move(ins), {std::move(shape)}, {dtype}, v});
    return v;
  };
  // Depends passes its first input through: it has that input's shape and dtype.
  const int held = step.inputs[0];
  std::vector<int> copy_inputs = step.inputs;
  copy_inputs[0] = add(std::make_shared<Depends>(step.primitive->stream(), 1), {held, trigger},
                       types.shapes[held], types.dtypes[held]);
  const int copy = add(step.primitive, copy_inputs, step.shapes[0], step.dtypes[0]);
  for (auto& read : late) {
    int v = copy;
    for (int view : read.views) {
      auto& vs = p.steps[view];
      v = add(vs.primitive, {v}, vs.shapes[0], vs.dtypes[0]);
    }
    out.steps[read.reader].inputs[read.slot] = v;
  }
  keep_needed_steps(out);
  return out;
}

}  // namespace

Program rematerialize(const Program& program, const std::vector<array>& inputs,
                      uint64_t* peak_bytes) {
  Program best = program;
  PeakSite peak;
  std::vector<int> order = eval_order(best);
  uint64_t best_peak = simulate_memory(best, inputs, order, &peak).peak_bytes;
  // Candidates are named by their output value, which keeps its number through rewrites; each
  // is tried once (a rejected one is not tried again at a later peak).
  std::unordered_set<int> tried;
  for (bool improved = true; improved;) {
    improved = false;
    Uses uses(best, order, inputs);
    for (int s : peak.live_steps) {
      if (!tried.insert(best.steps[s].first_output).second) {
        continue;
      }
      auto trial = recompute_late(best, uses, s, peak.position);
      if (!trial) {
        continue;
      }
      PeakSite trial_peak;
      std::vector<int> trial_order = eval_order(*trial);
      uint64_t trial_bytes = simulate_memory(*trial, inputs, trial_order, &trial_peak).peak_bytes;
      if (trial_bytes < best_peak) {
        best = std::move(*trial);
        best_peak = trial_bytes;
        peak = std::move(trial_peak);
        order = std::move(trial_order);
        improved = true;
        break;
      }
    }
  }
  if (peak_bytes) {
    *peak_bytes = best_peak;
  }
  return best;
}

}  // namespace mlx::core::detail
