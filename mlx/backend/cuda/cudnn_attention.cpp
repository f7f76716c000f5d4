// scaled_dot_product_attention through cuDNN's fused attention: its frontend builds the sdpa
// and sdpa_backward graphs, cuDNN picks the kernels (on Hopper, warp-group kernels that our
// flash kernels do not match). One graph per direction, geometry and operand layout, built on
// first use and kept; a geometry cuDNN declines is remembered and left to the flash kernels.
// Shapes that change from call to call stay off this path, as building a graph costs far more
// than running one: a few query rows (decoding against a growing cache: a new key length every
// token), and every geometry past the first kMaxGraphs (prompts of many lengths).
// MLX_SDPA_CUDNN=0 turns this path off; MLX_CUDNN_DEBUG=1 prints each graph's fate.
// The training graphs are autotuned (every plan the heuristics list, the fastest kept on the
// first call's operands; autotuned() has the measurements); MLX_SDPA_CUDNN_AUTOTUNE=1 also
// autotunes the inference forward, =0 none.
#include "mlx/backend/cuda/cudnn_attention.h"

#include <cstdio>
#include <cstring>
#include <map>

#include "mlx/backend/cuda/cudnn_graph.h"

// The frontend finds cuDNN's functions through this handle: the library cudnn_api loaded (set
// by graph_device before the first graph is built). Every user of cudnn_graph.h shares it.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace mlx::core::cu {

namespace {

using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDOut, kDQ, kDK, kDV };

// Fewer query rows go to the flash kernels, and so does every geometry past kMaxGraphs.
constexpr int64_t kMinQueryRows = 64;
constexpr size_t kMaxGraphs = 64;

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("MLX_SDPA_CUDNN");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Which plans are timed on their first call (MLX_SDPA_CUDNN_AUTOTUNE). By default those of
// training, the forward with statistics and the backward: their geometry repeats for a whole
// run, and on an H100 the fastest plan beat the heuristics' first by 5-15% for about 0.6 s once.
// "1" times the inference forward too (serving meets new prompt lengths all the time), "0" none.
bool autotuned(bool training) {
  enum class Autotune { none, training, all };
  static const Autotune mode = [] {
    const char* v = std::getenv("MLX_SDPA_CUDNN_AUTOTUNE");
    if (v != nullptr && std::strcmp(v, "1") == 0) {
      return Autotune::all;
    }
    if (v != nullptr && std::strcmp(v, "0") == 0) {
      return Autotune::none;
    }
    return Autotune::training;
  }();
  return mode == Autotune::all || (mode == Autotune::training && training);
}

std::vector<int64_t> dims_of(const array& a) {
  return {a.shape(0), a.shape(1), a.shape(2), a.shape(3)};
}
std::vector<int64_t> strides_of(const array& a) {
  return {a.strides(0), a.strides(1), a.strides(2), a.strides(3)};
}

Tensor input(fe::graph::Graph& g, const char* name, Uid uid, const array& a) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(dims_of(a))
                      .set_stride(strides_of(a)));
}
void mark_output(const Tensor& t, Uid uid, const array& a) {
  t->set_output(true).set_uid(uid).set_dim(dims_of(a)).set_stride(strides_of(a));
}

// Row-major strides for `a`'s shape.
std::vector<int64_t> dense_strides(const array& a) {
  return {a.shape(1) * a.shape(2) * a.shape(3), a.shape(2) * a.shape(3), a.shape(3), 1};
}

// Describes the row statistics: each query row's log-sum-exp of its scaled scores (natural
// log, cuDNN's convention), float (B, N_q, T_q, 1), dense; the forward writes them, the
// backward reads them.
fe::graph::Tensor_attributes& as_stats(fe::graph::Tensor_attributes& t, const array& q) {
  return t.set_uid(kStats)
      .set_data_type(fe::DataType_t::FLOAT)
      .set_dim({q.shape(0), q.shape(1), q.shape(2), 1})
      .set_stride({q.shape(1) * q.shape(2), q.shape(2), 1, 1});
}

std::shared_ptr<fe::graph::Graph> new_graph(Dtype dtype) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(dtype == float16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

// MLX's causal mask: query i of T_q sees keys j <= i + T_kv - T_q. With T_q == T_kv that is
// cuDNN's top-left causal mask, the form its Hopper kernels are tuned for.
template <typename Attributes>
void set_mask(Attributes& a, bool causal, const array& q, const array& k) {
  if (causal) {
    a.set_diagonal_alignment(q.shape(2) == k.shape(2) ? fe::DiagonalAlignment_t::TOP_LEFT
                                                      : fe::DiagonalAlignment_t::BOTTOM_RIGHT)
        .set_diagonal_band_right_bound(0);
  }
}

// The forward graph, writing (B, N_q, T_q, D_v) with `out_strides`; with `stats`, it also
// writes each row's log-sum-exp (for the backward).
std::shared_ptr<fe::graph::Graph> forward_graph(const array& q, const array& k, const array& v,
                                                std::vector<int64_t> out_strides, float scale,
                                                bool causal, bool stats) {
  auto g = new_graph(q.dtype());
  auto attributes =
      fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(stats).set_attn_scale(scale);
  set_mask(attributes, causal, q, k);
  auto [o, lse] = g->sdpa(input(*g, "q", kQ, q), input(*g, "k", kK, k), input(*g, "v", kV, v),
                          std::move(attributes));
  o->set_output(true)
      .set_uid(kO)
      .set_dim({q.shape(0), q.shape(1), q.shape(2), v.shape(3)})
      .set_stride(std::move(out_strides));
  if (stats) {
    as_stats(*lse, q).set_output(true);
  }
  return g;
}

std::shared_ptr<fe::graph::Graph> backward_graph(const array& q, const array& k, const array& v,
                                                 const array& out, const array& d_out,
                                                 const array& dq, const array& dk, const array& dv,
                                                 float scale, bool causal) {
  auto g = new_graph(q.dtype());
  auto attributes =
      fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(scale);
  set_mask(attributes, causal, q, k);
  fe::graph::Tensor_attributes stats;
  Tensor lse = g->tensor(as_stats(stats.set_name("stats"), q));
  auto [gq, gk, gv] = g->sdpa_backward(input(*g, "q", kQ, q), input(*g, "k", kK, k),
                                       input(*g, "v", kV, v), input(*g, "o", kO, out),
                                       input(*g, "d_o", kDOut, d_out), lse, std::move(attributes));
  mark_output(gq, kDQ, dq);
  mark_output(gk, kDK, dk);
  mark_output(gv, kDV, dv);
  return g;
}

std::string describe(const array& q, const array& k, bool causal) {
  return "B " + std::to_string(q.shape(0)) + ", heads " + std::to_string(q.shape(1)) + "/" +
         std::to_string(k.shape(1)) + ", T " + std::to_string(q.shape(2)) + "/" +
         std::to_string(k.shape(2)) + ", D " + std::to_string(q.shape(3)) +
         (causal ? ", causal" : "");
}

// The cached plan for `key`, made by `make` on first use (under the device's cuDNN mutex) and,
// where autotuned(training), timed on `pack`'s operands (its outputs are written over). `q`, `k`
// and `causal` name the geometry in MLX_CUDNN_DEBUG's line.
template <typename Make>
const CudnnGraph& plan_for(const std::vector<int64_t>& key, bool training, cudnnHandle_t handle,
                           const char* what, const array& q, const array& k, bool causal,
                           std::unordered_map<int64_t, void*>& pack, Make make) {
  static std::mutex mutex;
  static auto* plans = new std::map<std::vector<int64_t>, CudnnGraph>();  // kept until exit
  static const CudnnGraph* over_budget = new CudnnGraph{nullptr, 0, "graph budget spent"};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = plans->find(key); it != plans->end()) {
      return it->second;
    }
    if (plans->size() >= kMaxGraphs) {
      return *over_budget;
    }
  }
  const bool timed = autotuned(training);
  CudnnGraph plan =
      timed ? build_graph(make(), handle, fe::BuildPlanPolicy_t::ALL) : build_graph(make(), handle);
  if (plan.graph && timed) {
    Scratch workspace(static_cast<size_t>(plan.graph->get_autotune_workspace_size()));
    (void)plan.graph->autotune(handle, pack, workspace.as<void>());  // else the first stays
    plan.workspace = plan.graph->get_workspace_size();
  }
  if (cudnn_debug()) {
    std::fprintf(
        stderr, "[sdpa] %s (%s): %s\n", what, describe(q, k, causal).c_str(),
        plan.graph
            ? ("cuDNN " + plan_name(plan) + ", workspace " + std::to_string(plan.workspace)).c_str()
            : ("flash kernels (cuDNN: " + plan.why + ")").c_str());
  }
  std::lock_guard<std::mutex> lock(mutex);
  return plans->emplace(key, std::move(plan)).first->second;
}

void append_layout(std::vector<int64_t>& key, const array& a) {
  auto d = dims_of(a), s = strides_of(a);
  key.insert(key.end(), d.begin(), d.end());
  key.insert(key.end(), s.begin(), s.end());
}

template <typename... Arrays>
std::vector<int64_t> key_of(int64_t direction, float scale, bool causal, const array& q,
                            const Arrays&... rest) {
  int32_t scale_bits;
  std::memcpy(&scale_bits, &scale, sizeof(scale_bits));
  std::vector<int64_t> key{current_device(), direction, static_cast<int64_t>(q.dtype().val), causal,
                           scale_bits};
  append_layout(key, q);
  (append_layout(key, rest), ...);
  return key;
}

void* address(const array& a) {
  return const_cast<void*>(static_cast<const void*>(a.gpu_data<char>()));
}

// The device's cuDNN handle, on the current stream, with its mutex held by `lock`; null where
// this path is off or cuDNN is unavailable.
CudnnDevice* ready_device(std::unique_lock<std::mutex>& lock) {
  return enabled() ? graph_device(lock, "scaled_dot_product_attention") : nullptr;
}

void execute(const CudnnGraph& plan, cudnnHandle_t handle, std::unordered_map<int64_t, void*>& pack,
             const char* op) {
  run_graph(plan, handle, pack, op, "fused attention");
}

// Whether cuDNN takes this call: enough query rows (see the file's comment), and every row
// seeing a key (rows that see none, causal with T_q > T_kv, are zeros in MLX; the flash kernels
// keep that).
bool cudnn_takes(const array& q, const array& k, bool causal) {
  return q.shape(2) >= kMinQueryRows && (!causal || q.shape(2) <= k.shape(2));
}

// Plan keys' first entry: which graph.
enum Direction : int64_t {
  kForward = 0,
  kForwardStatsToScratch = 1,  // the backward's recomputation: out to dense scratch
  kBackward = 2,
  kForwardWithStats = 3,  // a forward traced for a backward: out and lse to the outputs
};

}  // namespace

bool cudnn_attention(const array& q, const array& k, const array& v, array& out, float* lse,
                     float scale, bool causal) {
  std::unique_lock<std::mutex> lock;
  CudnnDevice* dev = cudnn_takes(q, k, causal) ? ready_device(lock) : nullptr;
  if (!dev) {
    return false;
  }
  const bool stats = lse != nullptr;
  std::unordered_map<int64_t, void*> pack{
      {kQ, address(q)}, {kK, address(k)}, {kV, address(v)}, {kO, out.gpu_data<char>()}};
  if (stats) {
    pack.emplace(kStats, lse);
  }
  const CudnnGraph& plan =
      plan_for(key_of(stats ? kForwardWithStats : kForward, scale, causal, q, k, v, out), stats,
               dev->handle, stats ? "forward with stats" : "forward", q, k, causal, pack,
               [&] { return forward_graph(q, k, v, strides_of(out), scale, causal, stats); });
  if (!plan.graph) {
    return false;
  }
  execute(plan, dev->handle, pack, "scaled_dot_product_attention");
  return true;
}

bool cudnn_attention_backward(const array& q, const array& k, const array& v, const array& out,
                              const array& d_out, const float* lse, array& dq, array& dk, array& dv,
                              float scale, bool causal) {
  std::unique_lock<std::mutex> lock;
  CudnnDevice* dev = cudnn_takes(q, k, causal) ? ready_device(lock) : nullptr;
  if (!dev) {
    return false;
  }
  // Without the forward's lse, the row statistics come from a forward pass with stats (its
  // output, the same as `out`, goes to dense scratch) first.
  Scratch stats(lse ? 0 : q.shape(0) * q.shape(1) * q.shape(2) * sizeof(float));
  Scratch recomputed(lse ? 0 : out.nbytes());
  std::unordered_map<int64_t, void*> forward_pack{{kQ, address(q)},
                                                  {kK, address(k)},
                                                  {kV, address(v)},
                                                  {kO, recomputed.as<void>()},
                                                  {kStats, stats.as<void>()}};
  void* row_stats = lse ? const_cast<float*>(lse) : stats.as<void>();
  std::unordered_map<int64_t, void*> pack{
      {kQ, address(q)},           {kK, address(k)},           {kV, address(v)},
      {kO, address(out)},         {kDOut, address(d_out)},    {kStats, row_stats},
      {kDQ, dq.gpu_data<char>()}, {kDK, dk.gpu_data<char>()}, {kDV, dv.gpu_data<char>()}};
  const CudnnGraph& plan =
      plan_for(key_of(kBackward, scale, causal, q, k, v, out, d_out, dq, dk, dv), true, dev->handle,
               "backward", q, k, causal, pack,
               [&] { return backward_graph(q, k, v, out, d_out, dq, dk, dv, scale, causal); });
  const CudnnGraph* stats_plan =
      lse ? nullptr
          : &plan_for(key_of(kForwardStatsToScratch, scale, causal, q, k, v), true, dev->handle,
                      "forward with stats", q, k, causal, forward_pack, [&] {
                        return forward_graph(q, k, v, dense_strides(out), scale, causal, true);
                      });
  if (!plan.graph || (stats_plan && !stats_plan->graph)) {
    return false;
  }
  constexpr const char* op = "scaled_dot_product_attention vjp";
  if (stats_plan) {
    execute(*stats_plan, dev->handle, forward_pack, op);
  }
  execute(plan, dev->handle, pack, op);
  return true;
}

}  // namespace mlx::core::cu
