// The array handle: a cheap shared reference to a node of the lazy graph.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "mlx/dtype.h"
#include "mlx/memory/allocator.h"
#include "mlx/memory/residency.h"
#include "mlx/runtime/event.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

using Shape = std::vector<int32_t>;
using Strides = std::vector<int64_t>;
using Deleter = std::function<void(allocator::Buffer)>;

class Primitive;

namespace detail {
// True while a function transform (vjp, jvp, vmap, compile) is tracing a function.
bool in_tracing();
}  // namespace detail

// C++ scalars default to these dtypes (double maps to float32 as in MLX).
template <typename T>
constexpr Dtype default_dtype_of() {
  if constexpr (std::is_same_v<T, double>) {
    return float32;
  } else {
    return dtype_of<T>();
  }
}

class array {
 public:
  template <typename T,
            typename = std::enable_if_t<std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> ||
                                        std::is_same_v<T, bfloat16_t>>>
  explicit array(T val, Dtype dtype = default_dtype_of<T>()) : array(Shape{}, dtype) {
    init_from(&val, dtype_of<T>());
  }
  explicit array(std::complex<float> val, Dtype dtype = complex64);

  // Copies `shape`-many elements starting at `data`.
  template <typename T>
  array(const T* data, Shape shape, Dtype dtype = default_dtype_of<T>())
      : array(std::move(shape), dtype) {
    init_from(data, dtype_of<T>());
  }
  template <typename T>
  array(std::initializer_list<T> data, Dtype dtype = default_dtype_of<T>())
      : array(Shape{static_cast<int32_t>(data.size())}, dtype) {
    init_from(data.begin(), dtype_of<T>());
  }
  template <typename T>
  array(std::initializer_list<T> data, Shape shape, Dtype dtype = default_dtype_of<T>())
      : array(std::move(shape), dtype) {
    check_init_size(data.size());
    init_from(data.begin(), dtype_of<T>());
  }
  template <typename T>
  array(const std::vector<T>& data, Shape shape, Dtype dtype = default_dtype_of<T>())
      : array(std::move(shape), dtype) {
    check_init_size(data.size());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(data.begin(), data.end());
      init_from(reinterpret_cast<const bool*>(bytes.data()), bool_);
    } else {
      init_from(data.data(), dtype_of<T>());
    }
  }

  // Wraps memory that is already allocated; `deleter` releases it.
  array(allocator::Buffer data, Shape shape, Dtype dtype, Deleter deleter = allocator::free);

  // An unevaluated array produced by `primitive` from `inputs`.
  array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs);
  // The sibling outputs of one multi-output primitive.
  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        const std::shared_ptr<Primitive>& primitive,
                                        const std::vector<array>& inputs);

  array(const array&) = default;
  array(array&&) = default;
  // Replacing a handle drops it as ~array does: when it was the last outside handle of an
  // unevaluated output group, the group's cycle is broken first (else the group, its
  // outputs and everything they reach would never be freed).
  array& operator=(const array& other) &;
  array& operator=(array&& other) &;
  ~array();

  // Shape and type.
  Dtype dtype() const { return desc_->dtype; }
  size_t itemsize() const { return size_of(dtype()); }
  size_t size() const { return desc_->size; }
  size_t nbytes() const { return size() * itemsize(); }
  int ndim() const { return static_cast<int>(desc_->shape.size()); }
  const Shape& shape() const { return desc_->shape; }
  // Size of dimension `dim`; negative counts from the end.
  int shape(int dim) const;
  const Strides& strides() const { return desc_->strides; }
  int64_t strides(int dim) const;

  // Evaluation.
  void eval();
  template <typename T>
  T item();
  template <typename T>
  T item() const;

  // Memory layout after evaluation.
  struct Flags {
    bool contiguous : 1;      // elements occupy [data, data + data_size) without gaps
    bool row_contiguous : 1;  // C order
    bool col_contiguous : 1;  // Fortran order
  };
  const Flags& flags() const { return desc_->flags; }
  // Elements of the underlying contiguous span that the view covers (can be < size() for
  // broadcasts, where strides are 0).
  size_t data_size() const { return desc_->data_size; }
  // The host block (empty while the bytes are valid only on the GPU).
  allocator::Buffer& buffer() { return desc_->data->buffer; }
  const allocator::Buffer& buffer() const { return desc_->data->buffer; }
  // Bytes of the buffer behind this array (shared by its views).
  size_t buffer_size() const { return desc_->data ? desc_->data->nbytes : 0; }
  std::shared_ptr<void> data_shared_ptr() const { return desc_->data; }
  // Byte offset of the first element within the buffer.
  int64_t offset() const { return desc_->offset; }

  // Unified memory: a buffer has a host copy, a GPU copy, or both. Host pointers bring the
  // bytes to the host first (once, after the work that produced them); GPU pointers bring them
  // to the device. Writing through one side (the non-const accessors) invalidates the other.
  template <typename T>
  T* data() {
    return desc_->data ? reinterpret_cast<T*>(desc_->data->host(true) + desc_->offset) : nullptr;
  }
  template <typename T>
  const T* data() const {
    return desc_->data ? reinterpret_cast<const T*>(desc_->data->host(false) + desc_->offset)
                       : nullptr;
  }
  template <typename T>
  T* gpu_data() {
    return desc_->data ? reinterpret_cast<T*>(desc_->data->device(true) + desc_->offset) : nullptr;
  }
  template <typename T>
  const T* gpu_data() const {
    return desc_->data ? reinterpret_cast<const T*>(desc_->data->device(false) + desc_->offset)
                       : nullptr;
  }
  // The blocks behind this array's buffer (host, device; each empty where it has none), for
  // tools that match arrays against allocator blocks.
  std::pair<const void*, const void*> block_addresses() const {
    return desc_->data ? std::pair<const void*, const void*>(desc_->data->buffer.ptr(),
                                                             desc_->data->gpu.ptr())
                       : std::pair<const void*, const void*>(nullptr, nullptr);
  }
  // Where this array's bytes are valid now (allocator::kOnHost / kOnDevice bits).
  uint8_t residency() const { return desc_->data ? desc_->data->valid.load() : 0; }

  // Graph.
  bool has_primitive() const { return desc_->primitive != nullptr; }
  Primitive& primitive() const { return *desc_->primitive; }
  const std::shared_ptr<Primitive>& primitive_ptr() const { return desc_->primitive; }
  // The outputs of one step share its inputs (held once, by their group).
  const std::vector<array>& inputs() const {
    const OutputGroup* g = desc_->group_view.load(std::memory_order_acquire);
    return g ? g->inputs : desc_->inputs;
  }
  // Whether this is one of several outputs of an unevaluated step.
  bool has_siblings() const { return desc_->group_view.load(std::memory_order_acquire) != nullptr; }
  // This array and its siblings, in output order.
  std::vector<array> outputs() const;
  uint32_t sibling_position() const { return desc_->position; }
  uintptr_t id() const { return reinterpret_cast<uintptr_t>(desc_.get()); }
  // Drops the primitive, inputs and siblings: the array becomes a leaf.
  void detach();
  // Handles that share this node, its output group's reference included (an output of a
  // multi-output step that one consumer reads has 2).
  long use_count() const { return desc_.use_count(); }
  // For graph rewrites of unevaluated nodes that nothing outside the rewrite can reach
  // (transforms/widen_products.cpp), so that no one sees the change: this output's dtype, and
  // the primitive of its step (every output's). Both throw std::logic_error once it is scheduled.
  void rewrite_dtype(Dtype dtype);
  void rewrite_primitive(std::shared_ptr<Primitive> primitive);
  // Part of a function being traced by a transform: eval keeps its graph (the transform
  // walks it afterwards). Arrays computed from tracers are tracers.
  bool is_tracer() const { return desc_->is_tracer && detail::in_tracing(); }
  void set_tracer(bool t) { desc_->is_tracer = t; }

  enum class Status : uint8_t {
    unscheduled,  // has a primitive that has not been submitted
    scheduled,    // submitted to a stream; data arrives when its event signals
    available,    // data can be read
    failed,       // its kernel, or an input's, raised error(): evaluating it raises that again
  };
  Status status() const { return desc_->status.load(std::memory_order_acquire); }
  void set_status(Status s) const { desc_->status.store(s, std::memory_order_release); }
  // Marks the array failed with `e` (kept for every later evaluation that needs it).
  void set_failed(std::exception_ptr e) const {
    desc_->error = std::move(e);
    set_status(Status::failed);
  }
  const std::exception_ptr& error() const { return desc_->error; }
  // Evaluated, and any device work that produces it is done.
  bool is_available() const;
  // Blocks until the data is there (device work included).
  void wait() const;
  // Makes work submitted next to `consumer` wait for this array (on the device when it can).
  void wait(const Stream& consumer) const;
  Event& event() const { return desc_->event; }
  void attach_event(Event e) const { desc_->event = std::move(e); }

  // Unique holder of its node and of its buffer: an op may write its output in place.
  bool is_donatable() const {
    return desc_.use_count() == 1 && desc_->data && desc_->data.use_count() == 1 &&
           !desc_->data->external && desc_->data_size == desc_->size;
  }

  // Used by kernels to attach output memory: a host block, or a GPU block (from
  // allocator::gpu_malloc) that holds the only valid copy.
  void set_data(allocator::Buffer buffer, Deleter deleter = allocator::free);
  void set_data(allocator::Buffer buffer, size_t data_size, Strides strides, Flags flags,
                Deleter deleter = allocator::free);
  void set_gpu_data(allocator::Buffer gpu_buffer);
  void set_gpu_data(allocator::Buffer gpu_buffer, size_t data_size, Strides strides, Flags flags);
  // Makes this array a view of memory it does not own (e.g. a NumPy array's); `release` runs
  // once no array views it any more. Ops never write into such memory (not donatable).
  void set_external_data(void* ptr, size_t data_size, Strides strides, Flags flags,
                         Deleter release);
  // Makes this array a view of `other`'s buffer, starting `offset` elements further on.
  void copy_shared_buffer(const array& other, const Strides& strides, Flags flags, size_t data_size,
                          int64_t offset = 0);
  void copy_shared_buffer(const array& other);

 private:
  array(Shape shape, Dtype dtype);  // allocates row-contiguous storage
  void init_from(const void* src, Dtype src_dtype);
  void check_init_size(size_t n) const;

  // One buffer and the copies of its bytes.
  struct Data {
    allocator::Buffer buffer;  // host copy (empty until needed when made on the GPU)
    Deleter deleter;           // releases the host copy
    size_t nbytes;
    bool external = false;                 // memory of another owner: never written by ops
    allocator::Buffer gpu;                 // device copy, or empty
    std::atomic<uint8_t> valid;            // allocator::kOnHost | kOnDevice
    std::atomic<uint64_t> gpu_streams{0};  // the GPU streams that used the device copy
    std::mutex move_mutex;                 // held while bytes move between copies

    Data(allocator::Buffer b, Deleter d, size_t n)
        : buffer(b), deleter(std::move(d)), nbytes(n), valid(allocator::kOnHost) {}
    Data(const Data&) = delete;
    ~Data();
    char* host(bool write) {
      if (!(valid.load(std::memory_order_acquire) & allocator::kOnHost)) {
        bring_to_host();
      }
      if (write && (valid.load(std::memory_order_relaxed) & allocator::kOnDevice)) {
        valid.store(allocator::kOnHost, std::memory_order_release);
      }
      return static_cast<char*>(buffer.raw_ptr());
    }
    char* device(bool write);
    void bring_to_host();
  };

  struct OutputGroup {
    std::vector<array> outputs;
    // The step's inputs, once for all its outputs (n_out x n_in references otherwise, which a
    // step over many parameters cannot afford).
    std::vector<array> inputs;
    // Where ~array last found an output still held from outside: its next check starts there,
    // so dropping a group's handles in any order costs O(n) overall.
    std::atomic<uint32_t> held_hint{0};
  };

  struct ArrayDesc {
    Shape shape;
    Strides strides;
    size_t size = 0;
    Dtype dtype;
    std::shared_ptr<Primitive> primitive;
    std::atomic<Status> status{Status::unscheduled};
    Event event;
    std::exception_ptr error;  // set (before the status) when failed
    std::shared_ptr<Data> data;
    int64_t offset = 0;  // bytes from the buffer start to the first element
    size_t data_size = 0;
    Flags flags{};
    std::vector<array> inputs;  // a single output's (a group's outputs leave it empty)
    // The outputs of a multi-output step, this one included, in output order: one group shared
    // by them (null for a single output), so that n outputs hold n references, not n^2. They
    // keep each other alive through it until the step runs (detach) or nothing else holds any
    // of them (~array breaks the cycle). `group_view` (the same group, unowned; null when not
    // grouped) is what readers load, so that most arrays never touch the atomic shared pointer.
    std::atomic<std::shared_ptr<OutputGroup>> group;
    std::atomic<OutputGroup*> group_view{nullptr};
    uint32_t position = 0;
    bool is_tracer = false;

    ArrayDesc(Shape shape, Dtype dtype);
    ArrayDesc(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive,
              std::vector<array> inputs);
    // Releases a deep graph without recursion.
    ~ArrayDesc();
  };

  // This array's output group when this handle is all that references any of its outputs
  // from outside it (the cycle is then the group's alone), else null.
  std::shared_ptr<OutputGroup> orphaned_group() const;
  static void ungroup(OutputGroup& group);

  std::shared_ptr<ArrayDesc> desc_;
};

// Row-major strides for `shape`.
Strides row_major_strides(const Shape& shape);
size_t shape_size(const Shape& shape);  // throws on overflow / negative dims

template <typename T>
T array::item() {
  if (size() != 1) {
    throw std::invalid_argument("[item] Only size-1 arrays can be converted to scalars; got " +
                                std::to_string(size()) + " elements.");
  }
  eval();
  return static_cast<const array&>(*this).item<T>();
}

}  // namespace mlx::core
