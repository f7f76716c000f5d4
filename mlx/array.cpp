#include "mlx/array.h"

#include <algorithm>
#include <sstream>

#include "mlx/backend/common/convert.h"
#include "mlx/memory/trace.h"
#include "mlx/primitives/primitive.h"
#include "mlx/runtime/eval.h"
#include "mlx/utils.h"

namespace mlx::core {

size_t shape_size(const Shape& shape) {
  size_t size = 1;
  for (auto d : shape) {
    if (d < 0) {
      throw std::invalid_argument("[array] Negative dimension in shape " + to_string(shape) + ".");
    }
    if (d != 0 && size > SIZE_MAX / static_cast<size_t>(d)) {
      throw std::overflow_error("[array] Shape " + to_string(shape) + " has too many elements.");
    }
    size *= static_cast<size_t>(d);
  }
  return size;
}

Strides row_major_strides(const Shape& shape) {
  Strides strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  }
  return strides;
}

array::ArrayDesc::ArrayDesc(Shape shape_, Dtype dtype_)
    : shape(std::move(shape_)), size(shape_size(shape)), dtype(dtype_) {
  strides = row_major_strides(shape);
}

array::ArrayDesc::ArrayDesc(Shape shape_, Dtype dtype_, std::shared_ptr<Primitive> primitive_,
                            std::vector<array> inputs_)
    : shape(std::move(shape_)),
      size(shape_size(shape)),
      dtype(dtype_),
      primitive(std::move(primitive_)),
      inputs(std::move(inputs_)) {
  strides = row_major_strides(shape);
  is_tracer = detail::in_tracing() && std::any_of(inputs.begin(), inputs.end(),
                                                  [](const array& a) { return a.is_tracer(); });
}

array::ArrayDesc::~ArrayDesc() {
  // Inputs only we hold would be destroyed recursively; unlink them into a worklist instead.
  std::vector<std::shared_ptr<ArrayDesc>> pending;
  // Handles are dropped one at a time, so an input listed twice (x + x) is released by its
  // first handle and unlinked through its last one, never destroyed inside clear().
  auto unlink = [&pending](std::vector<array>& arrays) {
    for (auto& a : arrays) {
      if (!a.desc_) {
        continue;
      }
      if (a.desc_.use_count() == 1) {
        pending.push_back(std::move(a.desc_));
        continue;
      }
      // The last outside handle of an output group (an unevaluated multi-output node): the
      // group's references to its outputs are all that is left, so take the group apart here
      // and free its descs through the worklist (array::~array would, but recursively).
      if (auto group = a.orphaned_group()) {
        ungroup(*group);
        for (auto& o : group->outputs) {
          pending.push_back(std::move(o.desc_));
        }
        a.desc_.reset();
        continue;
      }
      a.desc_.reset();
    }
    arrays.clear();
  };
  unlink(inputs);
  while (!pending.empty()) {
    std::shared_ptr<ArrayDesc> d = std::move(pending.back());
    pending.pop_back();
    unlink(d->inputs);
  }
}

array::array(Shape shape, Dtype dtype)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  set_data(allocator::malloc(nbytes()));
}

array::array(std::complex<float> val, Dtype dtype) : array(Shape{}, dtype) {
  init_from(&val, complex64);
}

array::array(allocator::Buffer data, Shape shape, Dtype dtype, Deleter deleter)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype)) {
  set_data(data, std::move(deleter));
}

array::array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive,
             std::vector<array> inputs)
    : desc_(std::make_shared<ArrayDesc>(std::move(shape), dtype, std::move(primitive),
                                        std::move(inputs))) {
  // While a memory trace records stacks, remember where the op was created (else a no-op).
  allocator::trace::note_origin(desc_->primitive.get());
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                      const std::shared_ptr<Primitive>& primitive,
                                      const std::vector<array>& inputs) {
  std::vector<array> outputs;
  outputs.reserve(shapes.size());
  if (shapes.size() == 1) {
    outputs.emplace_back(std::move(shapes[0]), dtypes[0], primitive, inputs);
    return outputs;
  }
  auto group = std::make_shared<OutputGroup>();
  group->inputs = inputs;
  const bool tracer =
      detail::in_tracing() &&
      std::any_of(inputs.begin(), inputs.end(), [](const array& a) { return a.is_tracer(); });
  for (size_t i = 0; i < shapes.size(); ++i) {
    outputs.emplace_back(std::move(shapes[i]), dtypes[i], primitive, std::vector<array>{});
    outputs.back().desc_->is_tracer = tracer;
  }
  group->outputs = outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto& desc = *outputs[i].desc_;
    desc.position = static_cast<uint32_t>(i);
    desc.group.store(group);
    desc.group_view.store(group.get(), std::memory_order_release);
  }
  return outputs;
}

std::shared_ptr<array::OutputGroup> array::orphaned_group() const {
  if (!desc_ || !desc_->group_view.load(std::memory_order_acquire)) {
    return nullptr;
  }
  auto group = desc_->group.load();
  // This handle and the group's are this output's only references...
  if (!group || desc_.use_count() != 2) {
    return nullptr;
  }
  // ...and the group's are every other output's: an output held from outside is searched for
  // from where the last search found one.
  const uint32_t n = static_cast<uint32_t>(group->outputs.size());
  const uint32_t start = group->held_hint.load(std::memory_order_relaxed) % n;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = (start + k) % n;
    const auto& d = group->outputs[i].desc_;
    if (d && d != desc_ && d.use_count() > 1) {
      group->held_hint.store(i, std::memory_order_relaxed);
      return nullptr;
    }
  }
  return group;
}

// The outputs forget their group: its references to them are released with it. The first
// output takes the step's inputs, so that they are released like any node's (without
// recursion through a deep graph, see ~ArrayDesc).
void array::ungroup(OutputGroup& group) {
  for (auto& o : group.outputs) {
    o.desc_->group_view.store(nullptr, std::memory_order_release);
    o.desc_->group.store(nullptr);
  }
  if (!group.outputs.empty()) {
    group.outputs[0].desc_->inputs = std::move(group.inputs);
  }
}

array::~array() {
  // The outputs of a step reference each other through their group. When the group's
  // references are all that is left of every output (this handle aside), break the cycle so
  // the group is freed.
  if (auto group = orphaned_group()) {
    ungroup(*group);
  }
}

// The replaced handle ends in a temporary, whose destructor breaks its group's cycle.
array& array::operator=(const array& other) & {
  array replaced(other);
  std::swap(desc_, replaced.desc_);
  return *this;
}

array& array::operator=(array&& other) & {
  array replaced(std::move(other));
  std::swap(desc_, replaced.desc_);
  return *this;
}

int array::shape(int dim) const {
  int nd = ndim();
  if (dim < -nd || dim >= nd) {
    throw std::out_of_range("[array::shape] Axis " + std::to_string(dim) +
                            " is out of bounds for array with " + std::to_string(nd) +
                            " dimensions.");
  }
  return desc_->shape[dim < 0 ? dim + nd : dim];
}

int64_t array::strides(int dim) const {
  int nd = ndim();
  if (dim < -nd || dim >= nd) {
    throw std::out_of_range("[array::strides] Axis " + std::to_string(dim) +
                            " is out of bounds for array with " + std::to_string(nd) +
                            " dimensions.");
  }
  return desc_->strides[dim < 0 ? dim + nd : dim];
}

std::vector<array> array::outputs() const {
  if (desc_->group_view.load(std::memory_order_acquire)) {
    if (auto group = desc_->group.load()) {
      return group->outputs;
    }
  }
  return {*this};
}

void array::detach() {
  if (desc_->group_view.load(std::memory_order_acquire)) {
    if (auto group = desc_->group.load()) {
      ungroup(*group);
      for (auto& o : group->outputs) {
        o.desc_->primitive.reset();
        o.desc_->inputs.clear();
      }
    }  // the group, and the outputs nothing else holds, are freed here
  }
  desc_->primitive.reset();
  desc_->inputs.clear();
}

namespace {

void check_rewritable(const array& a) {
  if (a.status() != array::Status::unscheduled || !a.has_primitive()) {
    throw std::logic_error("[array] Only unevaluated nodes can be rewritten.");
  }
}

}  // namespace

void array::rewrite_dtype(Dtype dtype) {
  check_rewritable(*this);
  desc_->dtype = dtype;
}

void array::rewrite_primitive(std::shared_ptr<Primitive> primitive) {
  check_rewritable(*this);
  if (const OutputGroup* group = desc_->group_view.load(std::memory_order_acquire)) {
    for (const auto& o : group->outputs) {
      o.desc_->primitive = primitive;
    }
  } else {
    desc_->primitive = std::move(primitive);
  }
}

bool array::is_available() const {
  return status() != Status::unscheduled && desc_->event.is_signaled() &&
         status() == Status::available;
}

void array::wait() const {
  if (status() != Status::unscheduled) {
    desc_->event.wait();
  }
}

void array::wait(const Stream& consumer) const {
  if (status() != Status::unscheduled) {
    desc_->event.wait(consumer);
  }
}

void array::eval() {
  if (status() != Status::available) {
    mlx::core::eval({*this});
  } else {
    wait();
  }
}

array::Data::~Data() {
  if (gpu) {
    allocator::gpu_free(gpu, gpu_streams.load());
  }
  if (buffer || !gpu) {
    deleter(buffer);
  }
}

void array::Data::bring_to_host() {
  std::lock_guard<std::mutex> lock(move_mutex);
  if (valid.load() & allocator::kOnHost) {
    return;
  }
  if (!buffer) {
    buffer = allocator::malloc(nbytes);
  }
  allocator::copy_to_host(buffer.raw_ptr(), gpu.raw_ptr(), nbytes);
  valid.fetch_or(allocator::kOnHost, std::memory_order_release);
}

char* array::Data::device(bool write) {
  gpu_streams.fetch_or(allocator::current_gpu_stream_bit(), std::memory_order_relaxed);
  if (!(valid.load(std::memory_order_acquire) & allocator::kOnDevice)) {
    std::lock_guard<std::mutex> lock(move_mutex);
    if (!(valid.load() & allocator::kOnDevice)) {
      if (!gpu) {
        gpu = allocator::gpu_malloc(nbytes);
      }
      allocator::copy_to_device(gpu.raw_ptr(), buffer.raw_ptr(), nbytes);
      valid.fetch_or(allocator::kOnDevice, std::memory_order_release);
    }
  }
  if (write && (valid.load(std::memory_order_relaxed) & allocator::kOnHost)) {
    valid.store(allocator::kOnDevice, std::memory_order_release);
  }
  return static_cast<char*>(gpu.raw_ptr());
}

namespace {
array::Flags contiguous_flags(const Shape& shape, size_t size) {
  array::Flags f{};
  f.contiguous = true;
  f.row_contiguous = true;
  int non_unit = 0;
  for (auto d : shape) {
    non_unit += d != 1;
  }
  f.col_contiguous = size <= 1 || non_unit <= 1;
  return f;
}
}  // namespace

void array::set_data(allocator::Buffer buffer, Deleter deleter) {
  desc_->data = std::make_shared<Data>(buffer, std::move(deleter), nbytes());
  desc_->offset = 0;
  desc_->data_size = desc_->size;
  desc_->strides = row_major_strides(desc_->shape);
  desc_->flags = contiguous_flags(desc_->shape, desc_->size);
  set_status(Status::available);
}

void array::set_data(allocator::Buffer buffer, size_t data_size, Strides strides, Flags flags,
                     Deleter deleter) {
  desc_->data = std::make_shared<Data>(buffer, std::move(deleter), data_size * itemsize());
  desc_->offset = 0;
  desc_->data_size = data_size;
  desc_->strides = std::move(strides);
  desc_->flags = flags;
  set_status(Status::available);
}

void array::set_gpu_data(allocator::Buffer gpu_buffer) {
  set_gpu_data(gpu_buffer, desc_->size, row_major_strides(desc_->shape),
               contiguous_flags(desc_->shape, desc_->size));
}

void array::set_gpu_data(allocator::Buffer gpu_buffer, size_t data_size, Strides strides,
                         Flags flags) {
  set_data(allocator::Buffer(), data_size, std::move(strides), flags);
  desc_->data->gpu = gpu_buffer;
  desc_->data->valid.store(allocator::kOnDevice);
  desc_->data->gpu_streams.store(allocator::current_gpu_stream_bit());
}

void array::set_external_data(void* ptr, size_t data_size, Strides strides, Flags flags,
                              Deleter release) {
  // The buffer starts at the lowest address the view reaches (negative strides reach below
  // `ptr`), so that a copy of [buffer, buffer + nbytes) holds every element.
  int64_t lowest = 0;
  for (int i = 0; i < ndim(); ++i) {
    if (strides[i] < 0 && desc_->shape[i] > 0) {
      lowest += (desc_->shape[i] - 1) * strides[i];
    }
  }
  char* base = static_cast<char*>(ptr) + lowest * static_cast<int64_t>(itemsize());
  set_data(allocator::Buffer(base), data_size, std::move(strides), flags, std::move(release));
  desc_->offset = -lowest * static_cast<int64_t>(itemsize());
  desc_->data->external = true;
}

void array::copy_shared_buffer(const array& other, const Strides& strides, Flags flags,
                               size_t data_size, int64_t offset) {
  desc_->data = other.desc_->data;
  desc_->strides = strides;
  desc_->flags = flags;
  desc_->data_size = data_size;
  desc_->offset = other.desc_->offset + offset * static_cast<int64_t>(itemsize());
  set_status(Status::available);
}

void array::copy_shared_buffer(const array& other) {
  copy_shared_buffer(other, other.strides(), other.flags(), other.data_size());
}

void array::init_from(const void* src, Dtype src_dtype) {
  convert_elements(src, src_dtype, data<void>(), dtype(), size());
}

void array::check_init_size(size_t n) const {
  if (n != size()) {
    std::ostringstream msg;
    msg << "[array] Data size " << n << " does not match the size " << size() << " of shape "
        << shape() << ".";
    throw std::invalid_argument(msg.str());
  }
}

template <typename T>
T array::item() const {
  if (size() != 1) {
    throw std::invalid_argument("[item] Only size-1 arrays can be converted to scalars; got " +
                                std::to_string(size()) + " elements.");
  }
  if (status() != Status::available) {
    throw std::invalid_argument("[item] The array is not evaluated; call eval() first.");
  }
  wait();
  T out;
  convert_elements(data<void>(), dtype(), &out, dtype_of<T>(), 1);
  return out;
}

#define MLX_INSTANTIATE_ITEM(T) template T array::item<T>() const;
MLX_INSTANTIATE_ITEM(bool)
MLX_INSTANTIATE_ITEM(uint8_t)
MLX_INSTANTIATE_ITEM(uint16_t)
MLX_INSTANTIATE_ITEM(uint32_t)
MLX_INSTANTIATE_ITEM(uint64_t)
MLX_INSTANTIATE_ITEM(int8_t)
MLX_INSTANTIATE_ITEM(int16_t)
MLX_INSTANTIATE_ITEM(int32_t)
MLX_INSTANTIATE_ITEM(int64_t)
MLX_INSTANTIATE_ITEM(float16_t)
MLX_INSTANTIATE_ITEM(bfloat16_t)
MLX_INSTANTIATE_ITEM(float)
MLX_INSTANTIATE_ITEM(double)
MLX_INSTANTIATE_ITEM(complex64_t)
MLX_INSTANTIATE_ITEM(long long)
MLX_INSTANTIATE_ITEM(unsigned long long)
MLX_INSTANTIATE_ITEM(char)
#undef MLX_INSTANTIATE_ITEM

}  // namespace mlx::core
