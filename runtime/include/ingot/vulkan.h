/* ingot Vulkan HAL (hosted): runs a Vulkan module's plan on a Vulkan device.
 *
 * Load creates, for one module on one device: one VkBuffer for the arena (a tensor is
 * an offset into it, as on the CPU), one for the constants (uploaded once), one each
 * for the inputs and outputs (host-visible), one compute pipeline per SPIR-V kernel,
 * and ONE command buffer recorded once with every dispatch, copy and the barriers the
 * plan placed. Invoke copies the inputs in, submits that command buffer once, waits,
 * and copies the outputs out. The runtime core (ingot/runtime.h) validates the module
 * first; this layer checks what the device must offer.
 *
 * Thread-safety: an executable is used by one thread at a time. */
#ifndef INGOT_VULKAN_H_
#define INGOT_VULKAN_H_

#include <stddef.h>
#include <stdint.h>

#include "ingot/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One Vulkan device, as `ingot devices` lists it. */
typedef struct ingot_vulkan_device_info_t {
  char name[256];
  uint32_t type; /* VkPhysicalDeviceType: 1 integrated, 2 discrete, 3 virtual, 4 cpu */
  uint32_t vendor_id, device_id;
  uint32_t api_version; /* VK_MAKE_API_VERSION form */
  uint64_t max_storage_buffer_range;
  uint64_t min_storage_buffer_offset_alignment;
  uint32_t max_push_constants_size;
  uint32_t max_compute_shared_memory_size;
  uint32_t max_compute_workgroup_invocations;
  uint32_t max_compute_workgroup_count[3];
  uint32_t subgroup_size;
  int subgroup_arithmetic; /* subgroup add/max in compute shaders */
  uint64_t device_local_bytes;
  int has_compute_queue;
} ingot_vulkan_device_info_t;

/* Fills up to |capacity| entries of |out| (may be NULL when |capacity| is 0) and sets
 * |*out_count| to the number of devices. INGOT_UNSUPPORTED with a one-line |error| when
 * no Vulkan loader or driver is present. */
INGOT_MUST_USE ingot_status_t ingot_vulkan_list_devices(ingot_vulkan_device_info_t* out, uint32_t capacity,
                                                        uint32_t* out_count, char* error, size_t error_size);

typedef struct ingot_vulkan_executable_t ingot_vulkan_executable_t;

/* What one executable does per invoke (fixed at load: the command buffer never changes). */
typedef struct ingot_vulkan_stats_t {
  uint32_t submits_per_invoke;
  uint32_t dispatches;
  uint32_t barriers; /* plan barriers recorded (the final device-to-host barrier not counted) */
  uint32_t copies;
  uint32_t pipelines;
  uint32_t device_index;
  char device_name[256];
  double timestamp_period_ns; /* 0 when the queue has no timestamps */
} ingot_vulkan_stats_t;

/* Creates everything for |module| (loaded by ingot_module_load or the hosted loader;
 * arch INGOT_ARCH_VULKAN; weights set) on device |device_index| (-1: the best device,
 * a discrete GPU before an integrated one before a CPU implementation). |module| and
 * its bytes must outlive the executable. On failure returns a status and writes one
 * line into |error|: no device, a device without what the shaders need ("device
 * 'llvmpipe' lacks subgroup arithmetic, which this module's shaders need"), a buffer
 * beyond the device's limits, a Vulkan call that failed. Caller frees with
 * ingot_vulkan_executable_destroy. */
INGOT_MUST_USE ingot_status_t ingot_vulkan_executable_create(const ingot_module_t* module, int device_index,
                                                             ingot_vulkan_executable_t** out, char* error,
                                                             size_t error_size);

/* Runs the plan once: inputs[i] (the signature's byte size each) in, outputs[j] out.
 * One queue submission. Not thread-safe per executable. */
INGOT_MUST_USE ingot_status_t ingot_vulkan_invoke(ingot_vulkan_executable_t* exe, const void* const* inputs,
                                                  void* const* outputs, char* error, size_t error_size);

/* Device time of the last invoke in nanoseconds (GPU timestamps around the whole
 * command buffer), or -1 when the queue has no timestamps. */
double ingot_vulkan_last_device_ns(const ingot_vulkan_executable_t* exe);

void ingot_vulkan_executable_stats(const ingot_vulkan_executable_t* exe, ingot_vulkan_stats_t* out);

/* Validation-layer messages of severity error (or warning) seen since creation, when
 * VK_EXT_debug_utils is available; each is also printed to stderr. */
uint32_t ingot_vulkan_validation_errors(const ingot_vulkan_executable_t* exe);

/* Releases every Vulkan object. NULL-safe. */
void ingot_vulkan_executable_destroy(ingot_vulkan_executable_t* exe);

#ifdef __cplusplus
}
#endif

#endif /* INGOT_VULKAN_H_ */
