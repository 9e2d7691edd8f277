#include "tools/session.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include <unistd.h>

#include <fmt/format.h>

#include "compiler/ir/error.h"

#if defined(INGOT_HAVE_VULKAN)
#include "ingot/vulkan.h"
#endif

namespace ingot::tools {
namespace {

std::string describe(std::string_view role, size_t index, const TensorInfo& info) {
  return fmt::format("{} {} ('{}')", role, index, info.name);
}

}  // namespace

std::string describe_signature(std::string_view role, const std::vector<TensorInfo>& signature) {
  std::string list;
  for (size_t i = 0; i < signature.size(); ++i) {
    if (i != 0) list += ", ";
    list += fmt::format("{} '{}': {}", i, signature[i].name, signature[i].type());
  }
  return fmt::format("{} {}{}{}", signature.size(), role, signature.size() == 1 ? "" : "s",
                     list.empty() ? "" : " (" + list + ")");
}

void check_invoke_status(ingot_status_t status, std::string_view label) {
  if (status != INGOT_OK) {
    throw StatusError(status, fmt::format("invoking '{}' failed: {}", label, ingot_status_string(status)));
  }
}

void check_context_status(ingot_status_t status, std::string_view label, size_t arena_size) {
  if (status != INGOT_OK) {
    throw StatusError(status, fmt::format("cannot initialize a context for '{}' (arena of {} bytes): {}", label,
                                          arena_size, ingot_status_string(status)));
  }
}

AlignedBuffer::AlignedBuffer(size_t size) : size_(size) {
  const size_t alignment = INGOT_ARENA_ALIGNMENT;
  if (size > SIZE_MAX - alignment) throw std::bad_alloc();
  const size_t rounded = (std::max<size_t>(size, 1) + alignment - 1) / alignment * alignment;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(alignment, rounded)));
  if (!data_) fail("out of memory allocating {} bytes", size);
  std::memset(data_.get(), 0, rounded);
}

void check_tensor(std::string_view role, size_t index, const TensorInfo& expected,
                  const Tensor& got) {
  if (got.dtype != expected.dtype || got.dims != expected.dims) {
    fail_tensor_type(role, index, expected, format_type(got.dims, got.dtype));
  }
}

void fail_tensor_type(std::string_view role, size_t index, const TensorInfo& expected,
                      std::string_view got) {
  fail("{}: expected {}, got {}", describe(role, index, expected), expected.type(), got);
}

std::vector<Tensor> load_tensors(std::string_view role, std::string_view flag,
                                 const std::vector<std::string>& args,
                                 const std::vector<TensorInfo>& signature) {
  if (args.size() != signature.size()) {
    fail("the module has {}; got {} {} value{}", describe_signature(role, signature),
         args.size(), flag, args.size() == 1 ? "" : "s");
  }
  std::vector<Tensor> tensors;
  tensors.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    Tensor tensor;
    // An inline tensor's type is checked before its values are read, so a huge shape
    // that the module does not take costs no memory.
    const std::string& arg = args[i];
    const size_t eq = arg.find('=');
    if (!arg.empty() && arg.front() != '@' && eq != std::string::npos) {
      Tensor shape_only;
      try {
        std::string type = arg.substr(0, eq);
        type.erase(0, type.find_first_not_of(" \t"));
        type.erase(type.find_last_not_of(" \t") + 1);
        const TypeSpec spec = parse_type(type);
        shape_only.dtype = spec.dtype;
        shape_only.dims = spec.dims;
      } catch (const Error& e) {
        fail("{}: {}", describe(role, i, signature[i]), e.what());
      }
      check_tensor(role, i, signature[i], shape_only);
    }
    try {
      tensor = parse_tensor_arg(arg);
    } catch (const Error& e) {
      fail("{}: {}", describe(role, i, signature[i]), e.what());
    }
    check_tensor(role, i, signature[i], tensor);
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

Tensor random_tensor(const TensorInfo& info, std::mt19937_64& rng) {
  Tensor tensor;
  tensor.dtype = info.dtype;
  tensor.dims = info.dims;
  const uint64_t count = tensor.element_count();
  const size_t elem = dtype_size(info.dtype);
  tensor.bytes.assign(count * elem, 0);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t* p = tensor.bytes.data() + i * elem;
    if (info.dtype == INGOT_DTYPE_F32) {
      float v = real(rng);
      std::memcpy(p, &v, sizeof(v));
    } else {
      // Little-endian: a 0 or 1 in the lowest byte is that value at any width.
      p[0] = static_cast<uint8_t>(rng() & 1);
    }
  }
  return tensor;
}

std::vector<Tensor> random_tensors(const std::vector<TensorInfo>& signature, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> tensors;
  for (const TensorInfo& info : signature) tensors.push_back(random_tensor(info, rng));
  return tensors;
}

struct DeviceExecutable {
#if defined(INGOT_HAVE_VULKAN)
  ingot_vulkan_executable_t* exe = nullptr;
  ~DeviceExecutable() { ingot_vulkan_executable_destroy(exe); }
#endif
};

Session::Session(const std::string& path, uint32_t threads, int device, bool check_arena) : module_(path) {
  inputs_ = module_inputs(module());
  outputs_ = module_outputs(module());
  if (module().header->arch == INGOT_ARCH_VULKAN) {
#if defined(INGOT_HAVE_VULKAN)
    if (check_arena) fail("'{}': --check-arena is for CPU modules; a Vulkan module's arena is on the device", path);
    device_ = std::make_unique<DeviceExecutable>();
    char error[512] = "";
    if (ingot_vulkan_executable_create(&module(), device, &device_->exe, error, sizeof error) != INGOT_OK)
      fail("'{}': {}", path, error);
#else
    fail("'{}' is a Vulkan module, and this ingot was built without Vulkan (libvulkan-dev)", path);
#endif
  } else {
    if (device >= 0) fail("--device is for Vulkan modules; '{}' runs on the CPU", path);
    const size_t arena_size = ingot_module_arena_size(&module());
    // An arena beyond the machine's memory is refused before any allocation is tried.
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0 && arena_size / static_cast<size_t>(page_size) > static_cast<size_t>(pages)) {
      fail("'{}' asks for an arena of {} bytes, more than this machine's {} bytes of memory", path, arena_size,
           static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size));
    }
    uint8_t* arena = nullptr;
    try {
      if (check_arena) {
        guarded_arena_ = GuardedBuffer(arena_size);
        arena = guarded_arena_.data();
      } else {
        arena_ = AlignedBuffer(arena_size);
        arena = arena_.data();
      }
    } catch (const std::exception&) {
      fail("'{}' asks for an arena of {} bytes, which cannot be allocated", path, arena_size);
    }
    check_context_status(ingot_context_initialize(&module(), arena, arena_size, &context_), path, arena_size);
    // The arena check watches every step from one thread: every worker's list runs on
    // the caller's thread then (the same bits).
    const uint32_t workers = module().plan->worker_count;
    if (workers > 1 && threads != 1 && !check_arena) {
      const ingot_status_t status = ingot_hosted_context_create(&module(), threads, &threaded_);
      if (status != INGOT_OK) {
        fail("cannot start {} threads for '{}': {}", threads == 0 ? workers : threads, path,
             ingot_status_string(status));
      }
    }
  }
  // Never hand the runtime a null array, even for a module without inputs.
  input_pointers_.assign(std::max<size_t>(inputs_.size(), 1), nullptr);
  output_pointers_.assign(std::max<size_t>(outputs_.size(), 1), nullptr);
  if (check_arena) {
    for (const TensorInfo& info : inputs_) guarded_inputs_.emplace_back(info.byte_size);
    for (const TensorInfo& info : outputs_) guarded_outputs_.emplace_back(info.byte_size);
    std::vector<const GuardedBuffer*> in, out;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      input_pointers_[i] = guarded_inputs_[i].data();
      in.push_back(&guarded_inputs_[i]);
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      output_pointers_[i] = guarded_outputs_[i].data();
      out.push_back(&guarded_outputs_[i]);
    }
    checker_ = std::make_unique<ArenaChecker>(module(), &guarded_arena_, std::move(in), std::move(out));
  } else {
    for (const TensorInfo& info : inputs_) input_buffers_.emplace_back(info.byte_size);
    for (const TensorInfo& info : outputs_) output_buffers_.emplace_back(info.byte_size);
    for (size_t i = 0; i < inputs_.size(); ++i) input_pointers_[i] = input_buffers_[i].data();
    for (size_t i = 0; i < outputs_.size(); ++i) output_pointers_[i] = output_buffers_[i].data();
  }
}

void Session::set_inputs(const std::vector<Tensor>& tensors) {
  if (tensors.size() != inputs_.size()) {
    fail("the module has {} inputs, got {}", inputs_.size(), tensors.size());
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_tensor("input", i, inputs_[i], tensors[i]);
    if (tensors[i].bytes.size() != inputs_[i].byte_size) {
      fail("input {} ('{}'): the module expects {} bytes for {}, the tensor has {}", i,
           inputs_[i].name, inputs_[i].byte_size, inputs_[i].type(), tensors[i].bytes.size());
    }
    std::memcpy(const_cast<void*>(input_pointers_[i]), tensors[i].bytes.data(), tensors[i].bytes.size());
  }
}

Session::~Session() { ingot_hosted_context_destroy(threaded_); }

uint32_t Session::threads() const { return threaded_ ? ingot_hosted_context_threads(threaded_) : 1; }

DeviceStats Session::device_stats() const {
  DeviceStats d;
#if defined(INGOT_HAVE_VULKAN)
  if (!device_) return d;
  ingot_vulkan_stats_t s;
  ingot_vulkan_executable_stats(device_->exe, &s);
  d.device_name = s.device_name;
  d.device_index = s.device_index;
  d.submits_per_invoke = s.submits_per_invoke;
  d.dispatches = s.dispatches;
  d.barriers = s.barriers;
  d.copies = s.copies;
  d.pipelines = s.pipelines;
#endif
  return d;
}

double Session::last_device_us() const {
#if defined(INGOT_HAVE_VULKAN)
  if (device_) {
    const double ns = ingot_vulkan_last_device_ns(device_->exe);
    return ns < 0 ? -1 : ns / 1000.0;
  }
#endif
  return -1;
}

std::vector<std::string> describe_vulkan_devices(bool& found) {
  found = false;
#if defined(INGOT_HAVE_VULKAN)
  std::vector<ingot_vulkan_device_info_t> infos(16);
  uint32_t count = 0;
  char error[512] = "";
  if (ingot_vulkan_list_devices(infos.data(), static_cast<uint32_t>(infos.size()), &count, error, sizeof error) !=
      INGOT_OK)
    return {error};
  found = count > 0;
  static const char* kTypes[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU"};
  std::vector<std::string> lines;
  for (uint32_t i = 0; i < count && i < infos.size(); ++i) {
    const ingot_vulkan_device_info_t& d = infos[i];
    lines.push_back(fmt::format(
        "{}: {} ({}, Vulkan {}.{}.{}, vendor 0x{:04x} device 0x{:04x})\n"
        "   maxStorageBufferRange {}, minStorageBufferOffsetAlignment {}, maxPushConstantsSize {}\n"
        "   maxComputeSharedMemorySize {}, maxComputeWorkGroupInvocations {}, maxComputeWorkGroupCount {}x{}x{}\n"
        "   subgroup size {}, subgroup arithmetic {}, device-local memory {} MiB",
        i, d.name, d.type < 5 ? kTypes[d.type] : "other", (d.api_version >> 22) & 0x7fu,
        (d.api_version >> 12) & 0x3ffu, d.api_version & 0xfffu, d.vendor_id, d.device_id,
        d.max_storage_buffer_range, d.min_storage_buffer_offset_alignment, d.max_push_constants_size,
        d.max_compute_shared_memory_size, d.max_compute_workgroup_invocations, d.max_compute_workgroup_count[0],
        d.max_compute_workgroup_count[1], d.max_compute_workgroup_count[2], d.subgroup_size,
        d.subgroup_arithmetic ? "yes" : "no", d.device_local_bytes >> 20));
  }
  return lines;
#else
  fail("this ingot was built without Vulkan (libvulkan-dev)");
#endif
}

void Session::invoke() {
#if defined(INGOT_HAVE_VULKAN)
  if (device_) {
    char error[512] = "";
    if (ingot_vulkan_invoke(device_->exe, input_pointers_.data(), output_pointers_.data(), error, sizeof error) !=
        INGOT_OK)
      fail("invoking '{}' failed: {}", path(), error);
    if (const uint32_t n = ingot_vulkan_validation_errors(device_->exe))
      fail("'{}': the Vulkan validation layer reported {} error{}", path(), n, n == 1 ? "" : "s");
    return;
  }
#endif
  invoke_observed(nullptr, nullptr);
}

void Session::invoke_observed(ingot_step_observer_t observer, void* data) {
  if (device_) fail("'{}': per-step timing is for CPU modules; a Vulkan module runs as one command buffer", path());
  ingot_status_t status;
  if (checker_) {
    checker_->set_next(observer, data);
    checker_->begin();
    status = ingot_invoke_observed(&context_, input_pointers_.data(), output_pointers_.data(),
                                   &ArenaChecker::observe, checker_.get());
  } else if (threaded_) {
    status = observer ? ingot_hosted_invoke_observed(threaded_, input_pointers_.data(), output_pointers_.data(),
                                                     observer, data)
                      : ingot_hosted_invoke(threaded_, input_pointers_.data(), output_pointers_.data());
  } else if (observer) {
    status = ingot_invoke_observed(&context_, input_pointers_.data(), output_pointers_.data(), observer, data);
  } else {
    status = ingot_invoke(&context_, input_pointers_.data(), output_pointers_.data());
  }
  check_invoke_status(status, path());
  if (checker_) {
    const std::string violation = checker_->end();
    if (!violation.empty()) fail("{}", violation);
  }
}

Tensor Session::output(size_t index) const {
  const TensorInfo& info = outputs_.at(index);
  Tensor tensor;
  tensor.dtype = info.dtype;
  tensor.dims = info.dims;
  const uint64_t expected = tensor.element_count() * dtype_size(info.dtype);
  if (expected != info.byte_size) {
    fail("output {} ('{}'): the module records {} bytes for {}, which needs {}", index,
         info.name, info.byte_size, info.type(), expected);
  }
  const uint8_t* data = static_cast<const uint8_t*>(output_pointers_[index]);
  tensor.bytes.assign(data, data + info.byte_size);
  return tensor;
}

}  // namespace ingot::tools
