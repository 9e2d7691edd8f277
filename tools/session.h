// A module ready to invoke: loaded, with an arena, a context and caller-owned input
// and output buffers. Shared by `ingot run` and `ingot bench`.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tools/arena_check.h"
#include "tools/module_view.h"
#include "tools/tensor_io.h"

namespace ingot::tools {

// Zero-filled heap memory aligned to INGOT_ARENA_ALIGNMENT (64 bytes); never null,
// even for 0 bytes.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size);
  uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

// Throws ingot::Error "ROLE INDEX ('NAME'): expected 1x64xf32, got 1x63xf32" when
// |got| does not have |expected|'s dtype and shape.
void check_tensor(std::string_view role, size_t index, const TensorInfo& expected,
                  const Tensor& got);
// Throws that error with |got| as the type found ("1x63xf32").
[[noreturn]] void fail_tensor_type(std::string_view role, size_t index, const TensorInfo& expected,
                                   std::string_view got);

// Throw StatusError "invoking 'LABEL' failed: STATUS" / "cannot initialize a context for
// 'LABEL' (arena of N bytes): STATUS" unless |status| is INGOT_OK.
void check_invoke_status(ingot_status_t status, std::string_view label);
void check_context_status(ingot_status_t status, std::string_view label, size_t arena_size);

// "1 input (0 'input': 1x64xf32)", "2 outputs (0 'a': f32, 1 'b': 2xi64)", "0 inputs".
std::string describe_signature(std::string_view role, const std::vector<TensorInfo>& signature);

// Parses one tensor per signature entry from |args| (each "@file.npy" or an inline
// tensor) and checks count, dtype and shape. |role| and |flag| name them in errors
// ("input", "--input"). Throws ingot::Error.
std::vector<Tensor> load_tensors(std::string_view role, std::string_view flag,
                                 const std::vector<std::string>& args,
                                 const std::vector<TensorInfo>& signature);

// A tensor of |info|'s dtype and shape with values drawn from |rng|: f32 uniform in
// [-1, 1), integers 0 or 1, bool 0 or 1 (safe for index-like inputs).
Tensor random_tensor(const TensorInfo& info, std::mt19937_64& rng);
// One random_tensor per entry of |signature|, in order, from one generator seeded with
// |seed| (what `ingot bench` runs on when given no inputs).
std::vector<Tensor> random_tensors(const std::vector<TensorInfo>& signature, uint64_t seed);

// A Vulkan module's executable (runtime/hal/vulkan), opaque to tools that only invoke.
struct DeviceExecutable;

// What a Vulkan module does per invoke, fixed when its command buffer is recorded.
struct DeviceStats {
  std::string device_name;
  uint32_t device_index = 0;
  uint32_t submits_per_invoke = 0, dispatches = 0, barriers = 0, copies = 0, pipelines = 0;
};

class Session {
 public:
  // Loads |path| with the hosted runtime and binds a fresh arena. A plan for several
  // workers runs on |threads| threads (0: one per worker; 1: the caller's thread only).
  // A Vulkan module is loaded onto device |device| instead (-1: the best one), its
  // command buffer recorded. With |check_arena|, the arena, inputs and outputs are
  // guarded buffers and every invoke checks each step's writes (tools/arena_check.h);
  // every worker's list then runs on the caller's thread. Throws ingot::Error.
  explicit Session(const std::string& path, uint32_t threads = 0, int device = -1, bool check_arena = false);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Threads invoke runs on.
  uint32_t threads() const;
  bool on_device() const { return device_ != nullptr; }
  DeviceStats device_stats() const;
  // Device time of the last invoke (GPU timestamps), microseconds; < 0 when unknown.
  double last_device_us() const;

  const std::string& path() const { return module_.path(); }
  const ingot_module_t& module() const { return module_.module(); }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  size_t arena_size() const { return arena_.size(); }

  // Copies |tensors| (checked against the signature) into the input buffers.
  void set_inputs(const std::vector<Tensor>& tensors);
  // Runs the plan once with the current inputs. Throws ingot::Error on a failed status
  // or, in arena check mode, on the first write outside a step's bindings.
  void invoke();
  bool checking_arena() const { return checker_ != nullptr; }
  // invoke, calling |observer| around every step (per-step profiling).
  void invoke_observed(ingot_step_observer_t observer, void* data);
  // Output |index| of the last invoke, copied out.
  Tensor output(size_t index) const;

 private:
  HostedModule module_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  AlignedBuffer arena_;
  ingot_context_t context_{};
  ingot_hosted_context_t* threaded_ = nullptr;  // several threads; null: context_
  std::vector<AlignedBuffer> input_buffers_;
  std::vector<AlignedBuffer> output_buffers_;
  std::vector<const void*> input_pointers_;
  std::vector<void*> output_pointers_;
  std::unique_ptr<DeviceExecutable> device_;
  // Arena check mode: the guarded buffers the pointers above point into.
  GuardedBuffer guarded_arena_;
  std::vector<GuardedBuffer> guarded_inputs_;
  std::vector<GuardedBuffer> guarded_outputs_;
  std::unique_ptr<ArenaChecker> checker_;
};

// The Vulkan devices present, as `ingot devices` lists them (empty when none; throws
// ingot::Error when this ingot was built without Vulkan).
std::vector<std::string> describe_vulkan_devices(bool& found);

}  // namespace ingot::tools
