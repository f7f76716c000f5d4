// mx.compile over Python functions of trees. Traces are cached per Python function (every
// mx.compile(fun) of the same function shares them) and per call key: the tree structure of the
// arguments with their constants (non-array leaves) and array dtypes / shapes (ranks when
// shapeless), plus the arrays of the captured state. `inputs` trees are the C++ CompileOptions
// state, flattened on each call; `outputs` trees are flattened after the traced call and their
// new values written back into their lists and dicts.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <map>
#include <memory>

#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"
#include "python/src/transforms.h"
#include "python/src/trees.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

// One traced program and the state arrays its C++ compiled function reads. What the function
// assigns (the `outputs` trees) is flattened after the traced call and returned after its
// results, so the trees may grow during the first call (an optimizer creating its state in its
// first update, as MLX programs expect); the grown state then keys a new trace on the next call.
struct Entry {
  ArrayFn compiled;
  std::vector<array> state_in;
  size_t num_results = 0;  // the function's own results; the state assigned follows them
  // The structure of the results, arrays standing for themselves (the traced ones are dropped
  // with their graph).
  nb::object out_tree;
  array blank{0.0f};
  // The call being traced; valid only during a call.
  nb::handle fun, structure, inputs, outputs;

  std::vector<array> trace(const std::vector<array>& args) {
    nb::object s = tree_unflatten(structure, args);
    // While tracing, state_in holds the placeholders of the state: the function must find them
    // in the input containers, which get their real values back afterwards.
    std::vector<array> saved = tree_flatten(inputs, false);
    tree_replace(inputs, state_in);
    try {
      nb::object out = call(fun, s[0], s[1]);
      std::vector<array> outs = tree_flatten(out, false);
      num_results = outs.size();
      std::vector<array> new_state = tree_flatten(outputs, false);
      outs.insert(outs.end(), new_state.begin(), new_state.end());
      out_tree = tree_map(out, [this](nb::handle leaf) {
        return nb::isinstance<array>(leaf) ? nb::cast(blank) : nb::borrow(leaf);
      });
      restore(saved);
      return outs;
    } catch (...) {
      restore(saved);
      throw;
    }
  }

  // Gives the input containers their real values back in place of the placeholders, also when
  // the call grew them.
  void restore(const std::vector<array>& saved) {
    std::vector<array> now = tree_flatten(inputs, false);
    if (now.size() == saved.size()) {
      tree_replace(inputs, saved);
      return;
    }
    std::map<uintptr_t, size_t> placeholder;
    for (size_t i = 0; i < state_in.size(); ++i) {
      placeholder[state_in[i].id()] = i;
    }
    for (auto& a : now) {
      if (auto it = placeholder.find(a.id()); it != placeholder.end()) {
        a = saved[it->second];
      }
    }
    tree_replace(inputs, now);
  }
};

struct FunCache;
using Registry = std::map<std::pair<PyObject*, bool>, std::weak_ptr<FunCache>>;
Registry& registry() {
  static auto* r = new Registry();  // never destroyed: caches may outlive static destruction
  return *r;
}

// The traces of one function (compiled with one shapeless setting).
struct FunCache {
  std::pair<PyObject*, bool> id;
  nb::dict index;  // call key -> position in entries
  std::vector<std::unique_ptr<Entry>> entries;
  ~FunCache() { registry().erase(id); }
};

class Compiled {
 public:
  Compiled(nb::callable fun, nb::object inputs, nb::object outputs, bool shapeless)
      : fun_(std::move(fun)),
        inputs_(inputs.is_none() ? nb::object(nb::list()) : std::move(inputs)),
        outputs_(outputs.is_none() ? nb::object(nb::list()) : std::move(outputs)),
        shapeless_(shapeless) {
    auto id = std::make_pair(fun_.ptr(), shapeless);
    auto found = registry().find(id);
    cache_ = found != registry().end() ? found->second.lock() : nullptr;
    if (!cache_) {
      cache_ = std::make_shared<FunCache>();
      cache_->id = id;
      registry()[id] = cache_;
    }
  }

  // No tp_clear: the registry needs fun_ alive while the cache exists; the collector breaks
  // cycles through the function's own references.
  std::vector<nb::handle> py_refs() const { return {fun_, inputs_, outputs_}; }

  nb::object operator()(const nb::args& args, const nb::kwargs& kwargs) {
    if (!compile_enabled()) {
      return call(fun_, args, kwargs);
    }
    std::vector<array> outs;
    Entry& e = with_entry(args, kwargs, [&](Entry& e, const std::vector<array>& flat) {
      outs = e.compiled(flat);
      tree_replace(outputs_, std::vector<array>(outs.begin() + e.num_results, outs.end()));
      outs.erase(outs.begin() + e.num_results, outs.end());
    });
    return tree_unflatten(e.out_tree, outs);
  }

  // What one call with these arguments allocates (traced if needed, not run).
  nb::dict memory_plan(const nb::args& args, const nb::kwargs& kwargs) {
    MemoryPlan plan;
    with_entry(args, kwargs, [&](Entry& e, const std::vector<array>& flat) {
      plan = mlx::core::memory_plan(e.compiled, flat);
    });
    nb::dict d;
    d["peak_bytes"] = plan.peak_bytes;
    d["input_bytes"] = plan.input_bytes;
    d["num_allocations"] = plan.num_allocations;
    d["allocated_bytes"] = plan.allocated_bytes;
    nb::list reused;
    for (auto& [step, from] : plan.reused_in_place) {
      reused.append(nb::make_tuple(step, from));
    }
    d["reused_in_place"] = reused;
    d["peak_step"] = plan.peak_step;
    nb::list live;
    for (size_t i = 0; i < plan.live_at_peak.size(); ++i) {
      live.append(nb::make_tuple(plan.live_at_peak[i], plan.live_bytes_at_peak[i]));
    }
    d["live_at_peak"] = live;
    return d;
  }

 private:
  // Finds (or makes) the entry of this call, gives it the state, runs `body` and leaves the
  // entry holding no state.
  template <typename F>
  Entry& with_entry(const nb::args& args, const nb::kwargs& kwargs, F&& body) {
    nb::object structure = nb::make_tuple(args, kwargs);
    std::vector<array> flat = tree_flatten(structure, false);
    std::vector<array> state_in = tree_flatten(inputs_, false);
    std::vector<array> state_out = tree_flatten(outputs_, false);
    nb::object key = nb::make_tuple(tree_key(structure, shapeless_),
                                    tree_key(nb::cast(state_in), shapeless_), state_out.size());
    Entry& e = entry(key, state_in);
    // The C++ compiled function holds pointers to the state arrays: assign them in place.
    std::copy(state_in.begin(), state_in.end(), e.state_in.begin());
    e.fun = fun_;
    e.structure = structure;
    e.inputs = inputs_;
    e.outputs = outputs_;
    auto clear = [&] {
      // Between calls the entry keeps no state alive (old parameters, say).
      std::fill(e.state_in.begin(), e.state_in.end(), e.blank);
    };
    try {
      body(e, flat);
    } catch (...) {
      clear();
      throw;
    }
    clear();
    return e;
  }

  Entry& entry(nb::handle key, const std::vector<array>& state_in) {
    nb::object pos = cache_->index.get(key, nb::none());
    if (!pos.is_none()) {
      return *cache_->entries[nb::cast<size_t>(pos)];
    }
    auto e = std::make_unique<Entry>();
    e->state_in = state_in;
    CompileOptions options{.shapeless = shapeless_};
    for (auto& a : e->state_in) {
      options.state_inputs.push_back(&a);
    }
    Entry* raw = e.get();
    e->compiled = compile([raw](const std::vector<array>& x) { return raw->trace(x); }, options);
    cache_->index[key] = cache_->entries.size();
    cache_->entries.push_back(std::move(e));
    return *raw;
  }

  nb::callable fun_;
  nb::object inputs_, outputs_;
  bool shapeless_;
  std::shared_ptr<FunCache> cache_;
};

}  // namespace

void init_compile(nb::module_& m) {
  static PyType_Slot slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(&traverse_refs<Compiled>)},
                                {0, nullptr}};
  nb::class_<Compiled>(m, "_CompiledFunction", nb::type_slots(slots))
      .def("__call__", &Compiled::operator())
      .def("memory_plan", &Compiled::memory_plan,
           "What one call with these arguments allocates, predicted without running it: a dict "
           "with peak_bytes (held inputs included), input_bytes, num_allocations, "
           "allocated_bytes, reused_in_place ((step, step whose buffer it writes) pairs), "
           "peak_step and live_at_peak ((step, bytes) pairs, largest first).");
  m.def(
      "compile",
      [](nb::callable fun, nb::object inputs, nb::object outputs, bool shapeless) {
        return Compiled(std::move(fun), std::move(inputs), std::move(outputs), shapeless);
      },
      nb::arg("fun"), nb::arg("inputs").none() = nb::none(), nb::arg("outputs").none() = nb::none(),
      nb::arg("shapeless") = false,
      "A compiled version of fun: traced once per call signature, then replayed. inputs and "
      "outputs are trees of arrays the function reads and assigns besides its arguments.");
}
