#include "tools/session.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>

#include <unistd.h>

#include <fmt/format.h>

#include "compiler/ir/error.h"

namespace ingot::tools {
namespace {

std::string describe(std::string_view role, size_t index, const TensorInfo& info) {
  return fmt::format("{} {} ('{}')", role, index, info.name);
}

// "1 input (0 'input': 1x64xf32)" / "2 outputs (0 'a': f32, 1 'b': 2xi64)"
std::string describe_signature(std::string_view role, const std::vector<TensorInfo>& signature) {
  std::string list;
  for (size_t i = 0; i < signature.size(); ++i) {
    if (i != 0) list += ", ";
    list += fmt::format("{} '{}': {}", i, signature[i].name, signature[i].type());
  }
  return fmt::format("{} {}{}{}", signature.size(), role, signature.size() == 1 ? "" : "s",
                     list.empty() ? "" : " (" + list + ")");
}

}  // namespace

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
    fail("{}: expected {}, got {}", describe(role, index, expected), expected.type(),
         format_type(got.dims, got.dtype));
  }
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

Session::Session(const std::string& path, bool check_arena) : module_(path) {
  inputs_ = module_inputs(module());
  outputs_ = module_outputs(module());
  const size_t arena_size = ingot_module_arena_size(&module());
  // An arena beyond the machine's memory is refused before any allocation is tried.
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0 && arena_size / static_cast<size_t>(page_size) > static_cast<size_t>(pages)) {
    fail("'{}' asks for an arena of {} bytes, more than this machine's {} bytes of memory", path, arena_size,
         static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size));
  }
  uint8_t* arena = nullptr;
  if (check_arena) {
    try {
      guarded_arena_ = GuardedBuffer(arena_size);
    } catch (const std::exception&) {
      fail("'{}' asks for an arena of {} bytes, which cannot be allocated", path, arena_size);
    }
    arena = guarded_arena_.data();
  } else {
    try {
      arena_ = AlignedBuffer(arena_size);
    } catch (const std::exception&) {
      fail("'{}' asks for an arena of {} bytes, which cannot be allocated", path, arena_size);
    }
    arena = arena_.data();
  }
  ingot_status_t status = ingot_context_initialize(&module(), arena, arena_size, &context_);
  if (status != INGOT_OK) {
    fail("cannot initialize a context for '{}' (arena of {} bytes): {}", path, arena_size,
         ingot_status_string(status));
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

void Session::invoke() { invoke_observed(nullptr, nullptr); }

void Session::invoke_observed(ingot_step_observer_t observer, void* data) {
  ingot_status_t status;
  if (checker_) {
    checker_->set_next(observer, data);
    checker_->begin();
    status = ingot_invoke_observed(&context_, input_pointers_.data(), output_pointers_.data(),
                                   &ArenaChecker::observe, checker_.get());
  } else if (observer) {
    status = ingot_invoke_observed(&context_, input_pointers_.data(), output_pointers_.data(),
                                   observer, data);
  } else {
    status = ingot_invoke(&context_, input_pointers_.data(), output_pointers_.data());
  }
  if (status != INGOT_OK) {
    fail("invoking '{}' failed: {}", path(), ingot_status_string(status));
  }
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
