/* Vulkan HAL: the plan as one command buffer. See ingot/vulkan.h. */
#include "ingot/vulkan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

#define INGOT_VK_FENCE_TIMEOUT_NS (300ull * 1000000000ull) /* an invoke never hangs */

typedef struct ingot_vk_buffer_t {
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceSize size;
  void* mapped; /* host-visible buffers stay mapped */
} ingot_vk_buffer_t;

struct ingot_vulkan_executable_t {
  const ingot_module_t* module;
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  ingot_vk_buffer_t arena, constants, inputs, outputs;
  uint64_t* input_offsets;  /* byte offset of each input in |inputs| */
  uint64_t* output_offsets; /* byte offset of each output in |outputs| */
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout pipeline_layout;
  VkDescriptorPool descriptor_pool;
  VkDescriptorSet descriptor_set;
  VkPipeline* pipelines;
  uint32_t pipeline_count;
  VkCommandPool command_pool;
  VkCommandBuffer commands;
  VkFence fence;
  VkQueryPool timestamps;
  double timestamp_period_ns;
  double last_device_ns;
  uint32_t validation_errors;
  ingot_vulkan_stats_t stats;
};

static void ingot_vk_error_(char* error, size_t error_size, const char* format, ...) {
  if (error == NULL || error_size == 0) return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_size, format, args);
  va_end(args);
}

static const char* ingot_vk_result_name_(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "out of device memory";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "initialization failed";
    case VK_ERROR_DEVICE_LOST:
      return "device lost";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "layer not present";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "extension not present";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "feature not present";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "no compatible Vulkan driver";
    case VK_TIMEOUT:
      return "timeout";
    default:
      return "Vulkan error";
  }
}

#define INGOT_VK_CHECK(call, what)                                                                                \
  do {                                                                                                            \
    VkResult r_ = (call);                                                                                         \
    if (r_ != VK_SUCCESS) {                                                                                       \
      ingot_vk_error_(error, error_size, "Vulkan: %s failed: %s (%d)", what, ingot_vk_result_name_(r_), (int)r_); \
      return INGOT_UNSUPPORTED;                                                                                   \
    }                                                                                                             \
  } while (0)

static VKAPI_ATTR VkBool32 VKAPI_CALL ingot_vk_debug_(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                      VkDebugUtilsMessageTypeFlagsEXT type,
                                                      const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  uint32_t* count = (uint32_t*)user;
  const int is_error = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0;
  if (is_error && count != NULL) ++*count;
  /* The loader's general notes ("env var VK_INSTANCE_LAYERS defined ...") are not findings. */
  if (!is_error && type == VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT) return VK_FALSE;
  const int validation = (type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) != 0;
  fprintf(stderr, "vulkan %s %s: %s\n", validation ? "validation" : "loader", is_error ? "error" : "warning",
          data && data->pMessage ? data->pMessage : "");
  return VK_FALSE;
}

static int ingot_vk_has_instance_extension_(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
  VkExtensionProperties* props = (VkExtensionProperties*)calloc(n, sizeof(*props));
  if (props == NULL) return 0;
  int found = 0;
  if (vkEnumerateInstanceExtensionProperties(NULL, &n, props) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; ++i) found = strcmp(props[i].extensionName, name) == 0;
  free(props);
  return found;
}

/* An instance for Vulkan 1.1; with |errors| non-NULL and debug utils available, a
 * messenger counting validation errors into it (also during instance creation). */
static ingot_status_t ingot_vk_create_instance_(VkInstance* out, VkDebugUtilsMessengerEXT* messenger,
                                                PFN_vkDestroyDebugUtilsMessengerEXT* destroy, uint32_t* errors,
                                                char* error, size_t error_size) {
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ingot";
  app.pEngineName = "ingot";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  const char* extensions[1] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT debug = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  const int with_debug = errors != NULL && ingot_vk_has_instance_extension_(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (with_debug) {
    debug.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    debug.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    debug.pfnUserCallback = ingot_vk_debug_;
    debug.pUserData = errors;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &debug;
  }
  VkResult r = vkCreateInstance(&info, NULL, out);
  if (r != VK_SUCCESS) {
    ingot_vk_error_(error, error_size,
                    "no Vulkan device: cannot create a Vulkan instance (%s); install a driver "
                    "(Debian: mesa-vulkan-drivers)",
                    ingot_vk_result_name_(r));
    return INGOT_UNSUPPORTED;
  }
  if (with_debug && messenger != NULL) {
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(*out, "vkCreateDebugUtilsMessengerEXT");
    *destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(*out, "vkDestroyDebugUtilsMessengerEXT");
    if (create != NULL && *destroy != NULL) (void)create(*out, &debug, NULL, messenger);
  }
  return INGOT_OK;
}

static void ingot_vk_describe_(VkPhysicalDevice pd, ingot_vulkan_device_info_t* d) {
  memset(d, 0, sizeof(*d));
  VkPhysicalDeviceSubgroupProperties sub = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  if (props.apiVersion >= VK_API_VERSION_1_1) {
    props2.pNext = &sub;
    vkGetPhysicalDeviceProperties2(pd, &props2);
    d->subgroup_size = sub.subgroupSize;
    d->subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                             (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) != 0 &&
                             (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  }
  snprintf(d->name, sizeof(d->name), "%s", props.deviceName);
  d->type = (uint32_t)props.deviceType;
  d->vendor_id = props.vendorID;
  d->device_id = props.deviceID;
  d->api_version = props.apiVersion;
  d->max_storage_buffer_range = props.limits.maxStorageBufferRange;
  d->min_storage_buffer_offset_alignment = props.limits.minStorageBufferOffsetAlignment;
  d->max_push_constants_size = props.limits.maxPushConstantsSize;
  d->max_compute_shared_memory_size = props.limits.maxComputeSharedMemorySize;
  d->max_compute_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) d->max_compute_workgroup_count[i] = props.limits.maxComputeWorkGroupCount[i];
  /* Test hook: INGOT_VULKAN_HIDE=subgroup-arithmetic makes a device look as if it
   * lacked subgroup arithmetic, so the refusal path can be exercised on any device. */
  const char* hide = getenv("INGOT_VULKAN_HIDE");
  if (hide != NULL && strstr(hide, "subgroup-arithmetic") != NULL) d->subgroup_arithmetic = 0;
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d->device_local_bytes += mem.memoryHeaps[i].size;
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
  VkQueueFamilyProperties q[32];
  if (nq > 32) nq = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
  for (uint32_t i = 0; i < nq; ++i)
    if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) d->has_compute_queue = 1;
}

static ingot_status_t ingot_vk_physical_devices_(VkInstance instance, VkPhysicalDevice** out, uint32_t* count,
                                                 char* error, size_t error_size) {
  *out = NULL;
  *count = 0;
  INGOT_VK_CHECK(vkEnumeratePhysicalDevices(instance, count, NULL), "vkEnumeratePhysicalDevices");
  if (*count == 0) {
    ingot_vk_error_(error, error_size,
                    "no Vulkan device: the Vulkan loader found no device "
                    "(Debian: mesa-vulkan-drivers provides lavapipe, a CPU implementation)");
    return INGOT_UNSUPPORTED;
  }
  *out = (VkPhysicalDevice*)calloc(*count, sizeof(VkPhysicalDevice));
  if (*out == NULL) {
    ingot_vk_error_(error, error_size, "out of memory");
    return INGOT_UNSUPPORTED;
  }
  INGOT_VK_CHECK(vkEnumeratePhysicalDevices(instance, count, *out), "vkEnumeratePhysicalDevices");
  return INGOT_OK;
}

ingot_status_t ingot_vulkan_list_devices(ingot_vulkan_device_info_t* out, uint32_t capacity, uint32_t* out_count,
                                         char* error, size_t error_size) {
  if (out_count == NULL || (out == NULL && capacity > 0)) return INGOT_INVALID_ARGUMENT;
  *out_count = 0;
  VkInstance instance;
  INGOT_RETURN_IF_ERROR(ingot_vk_create_instance_(&instance, NULL, NULL, NULL, error, error_size));
  VkPhysicalDevice* devices = NULL;
  uint32_t n = 0;
  ingot_status_t status = ingot_vk_physical_devices_(instance, &devices, &n, error, error_size);
  if (status == INGOT_OK) {
    for (uint32_t i = 0; i < n && i < capacity; ++i) ingot_vk_describe_(devices[i], &out[i]);
    *out_count = n;
  }
  free(devices);
  vkDestroyInstance(instance, NULL);
  return status;
}

/* A discrete GPU first, then integrated, virtual, other, and a CPU implementation last. */
static int ingot_vk_rank_(uint32_t type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 4;
    default:
      return 3;
  }
}

static int ingot_vk_memory_type_(const VkPhysicalDeviceMemoryProperties* mem, uint32_t bits,
                                 VkMemoryPropertyFlags need) {
  for (uint32_t i = 0; i < mem->memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mem->memoryTypes[i].propertyFlags & need) == need) return (int)i;
  return -1;
}

/* A buffer in the first memory type with all of |want| (tried in order; 0 ends). */
static ingot_status_t ingot_vk_buffer_(ingot_vulkan_executable_t* e, VkDeviceSize size, VkBufferUsageFlags usage,
                                       const VkMemoryPropertyFlags* want, ingot_vk_buffer_t* out, const char* what,
                                       char* error, size_t error_size) {
  memset(out, 0, sizeof(*out));
  out->size = size;
  VkBufferCreateInfo info = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  INGOT_VK_CHECK(vkCreateBuffer(e->device, &info, NULL, &out->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(e->device, out->buffer, &req);
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(e->physical, &mem);
  /* The first preference whose memory type exists and whose heap has room (a small
   * host-visible device-local heap, say, falls back to the next). */
  VkMemoryPropertyFlags got = 0;
  VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  int found = 0;
  for (const VkMemoryPropertyFlags* w = want; *w != 0 && r != VK_SUCCESS; ++w) {
    const int type = ingot_vk_memory_type_(&mem, req.memoryTypeBits, *w);
    if (type < 0) continue;
    found = 1;
    VkMemoryAllocateInfo alloc = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = (uint32_t)type;
    r = vkAllocateMemory(e->device, &alloc, NULL, &out->memory);
    got = *w;
  }
  if (!found) {
    ingot_vk_error_(error, error_size, "Vulkan device has no suitable memory for the %s buffer", what);
    return INGOT_UNSUPPORTED;
  }
  if (r != VK_SUCCESS) {
    out->memory = VK_NULL_HANDLE;
    ingot_vk_error_(error, error_size, "Vulkan: cannot allocate %llu bytes for the %s buffer: %s",
                    (unsigned long long)req.size, what, ingot_vk_result_name_(r));
    return INGOT_UNSUPPORTED;
  }
  INGOT_VK_CHECK(vkBindBufferMemory(e->device, out->buffer, out->memory, 0), "vkBindBufferMemory");
  if (got & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
    INGOT_VK_CHECK(vkMapMemory(e->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped), "vkMapMemory");
  return INGOT_OK;
}

static void ingot_vk_buffer_free_(ingot_vulkan_executable_t* e, ingot_vk_buffer_t* b) {
  if (b->buffer) vkDestroyBuffer(e->device, b->buffer, NULL);
  if (b->memory) vkFreeMemory(e->device, b->memory, NULL);
  memset(b, 0, sizeof(*b));
}

static uint64_t ingot_vk_align_(uint64_t v) { return (v + 63u) / 64u * 64u; }

/* Uploads the weights once: straight into mapped memory, or through a staging buffer
 * and one copy command when the constants live in device-only memory. */
static ingot_status_t ingot_vk_upload_constants_(ingot_vulkan_executable_t* e, char* error, size_t error_size) {
  const ingot_module_t* m = e->module;
  if (m->constants_size == 0) return INGOT_OK;
  if (e->constants.mapped != NULL) {
    memcpy(e->constants.mapped, m->constants, (size_t)m->constants_size);
    return INGOT_OK;
  }
  const VkMemoryPropertyFlags host[] = {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0};
  ingot_vk_buffer_t staging;
  INGOT_RETURN_IF_ERROR(ingot_vk_buffer_(e, m->constants_size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, host, &staging,
                                         "staging", error, error_size));
  memcpy(staging.mapped, m->constants, (size_t)m->constants_size);
  VkCommandBufferAllocateInfo alloc = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = e->command_pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cb;
  INGOT_VK_CHECK(vkAllocateCommandBuffers(e->device, &alloc, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  INGOT_VK_CHECK(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  VkBufferCopy region = {0, 0, m->constants_size};
  vkCmdCopyBuffer(cb, staging.buffer, e->constants.buffer, 1, &region);
  INGOT_VK_CHECK(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  INGOT_VK_CHECK(vkQueueSubmit(e->queue, 1, &submit, e->fence), "vkQueueSubmit");
  INGOT_VK_CHECK(vkWaitForFences(e->device, 1, &e->fence, VK_TRUE, INGOT_VK_FENCE_TIMEOUT_NS), "vkWaitForFences");
  INGOT_VK_CHECK(vkResetFences(e->device, 1, &e->fence), "vkResetFences");
  vkFreeCommandBuffers(e->device, e->command_pool, 1, &cb);
  ingot_vk_buffer_free_(e, &staging);
  return INGOT_OK;
}

/* Where a binding lives: the buffer and the byte offset within it. */
static void ingot_vk_locate_(const ingot_vulkan_executable_t* e, const ingot_binding_t* b, VkBuffer* buffer,
                             uint64_t* offset) {
  switch (b->base) {
    case INGOT_BASE_CONSTANTS:
      *buffer = e->constants.buffer;
      *offset = b->offset;
      return;
    case INGOT_BASE_INPUT:
      *buffer = e->inputs.buffer;
      *offset = e->input_offsets[b->index] + b->offset;
      return;
    case INGOT_BASE_OUTPUT:
      *buffer = e->outputs.buffer;
      *offset = e->output_offsets[b->index] + b->offset;
      return;
    default:
      *buffer = e->arena.buffer;
      *offset = b->offset;
      return;
  }
}

static void ingot_vk_barrier_(VkCommandBuffer cb, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier barrier = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1,
                       &barrier, 0, NULL, 0, NULL);
}

/* The whole plan, recorded once. */
static ingot_status_t ingot_vk_record_(ingot_vulkan_executable_t* e, char* error, size_t error_size) {
  const ingot_module_t* m = e->module;
  const uint32_t push_words = m->spirv->push_constant_bytes / 4u;
  VkCommandBufferAllocateInfo alloc = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = e->command_pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  INGOT_VK_CHECK(vkAllocateCommandBuffers(e->device, &alloc, &e->commands), "vkAllocateCommandBuffers");
  VkCommandBuffer cb = e->commands;
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  INGOT_VK_CHECK(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  if (e->timestamps) {
    vkCmdResetQueryPool(cb, e->timestamps, 0, 2);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, e->timestamps, 0);
  }
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline_layout, 0, 1, &e->descriptor_set, 0, NULL);
  uint32_t bound = UINT32_MAX;
  for (uint32_t s = 0; s < m->plan->step_count; ++s) {
    const ingot_step_t* step = &m->steps[s];
    const ingot_binding_t* b = &m->bindings[step->binding_first];
    if (step->kind == INGOT_STEP_DISPATCH) {
      const uint32_t pipeline = m->kernel_offsets[step->kernel];
      if (pipeline != bound) {
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipelines[pipeline]);
        bound = pipeline;
      }
      uint32_t words[INGOT_MAX_BINDINGS_PER_STEP];
      memset(words, 0, sizeof(words));
      for (uint32_t i = 0; i < step->binding_count && i < push_words; ++i) {
        VkBuffer buffer;
        uint64_t offset;
        ingot_vk_locate_(e, &b[i], &buffer, &offset);
        words[i] = (uint32_t)(offset / 4u);
      }
      vkCmdPushConstants(cb, e->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_words * 4u, words);
      vkCmdDispatch(cb, step->wg_end - step->wg_begin, 1, 1);
      ++e->stats.dispatches;
    } else if (step->kind == INGOT_STEP_COPY) {
      if (step->wg_end == 0) continue;
      VkBuffer src, dst;
      VkBufferCopy region;
      region.size = step->wg_end;
      ingot_vk_locate_(e, &b[0], &src, &region.srcOffset);
      ingot_vk_locate_(e, &b[1], &dst, &region.dstOffset);
      vkCmdCopyBuffer(cb, src, dst, 1, &region);
      ++e->stats.copies;
    } else if (step->kind == INGOT_STEP_BARRIER) {
      ingot_vk_barrier_(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT);
      ++e->stats.barriers;
    }
  }
  /* The outputs become visible to the host once the fence signals. */
  ingot_vk_barrier_(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  if (e->timestamps) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->timestamps, 1);
  INGOT_VK_CHECK(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return INGOT_OK;
}

/* Every step the command buffer will hold must fit the device as it is. */
static ingot_status_t ingot_vk_check_module_(const ingot_vulkan_executable_t* e, const ingot_vulkan_device_info_t* d,
                                             char* error, size_t error_size) {
  const ingot_module_t* m = e->module;
  const ingot_spirv_header_t* h = m->spirv;
  if (d->api_version < VK_API_VERSION_1_1) {
    ingot_vk_error_(error, error_size, "device '%s' supports Vulkan %u.%u; this module needs 1.1", d->name,
                    VK_API_VERSION_MAJOR(d->api_version), VK_API_VERSION_MINOR(d->api_version));
    return INGOT_UNSUPPORTED;
  }
  if ((h->device_features & INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC) && !d->subgroup_arithmetic) {
    ingot_vk_error_(error, error_size,
                    "device '%s' lacks subgroup arithmetic in compute shaders, which this module's "
                    "shaders need (compile with --target=vulkan-basic)",
                    d->name);
    return INGOT_UNSUPPORTED;
  }
  if (h->max_workgroup_size > d->max_compute_workgroup_invocations) {
    ingot_vk_error_(error, error_size, "device '%s' runs at most %u invocations per workgroup; this module needs %u",
                    d->name, d->max_compute_workgroup_invocations, h->max_workgroup_size);
    return INGOT_UNSUPPORTED;
  }
  if (h->max_shared_bytes > d->max_compute_shared_memory_size) {
    ingot_vk_error_(error, error_size, "device '%s' has %u bytes of shared memory per workgroup; this module needs %u",
                    d->name, d->max_compute_shared_memory_size, h->max_shared_bytes);
    return INGOT_UNSUPPORTED;
  }
  if (h->push_constant_bytes > d->max_push_constants_size) {
    ingot_vk_error_(error, error_size, "device '%s' has %u bytes of push constants; this module needs %u", d->name,
                    d->max_push_constants_size, h->push_constant_bytes);
    return INGOT_UNSUPPORTED;
  }
  const uint64_t sizes[4] = {e->arena.size, e->constants.size, e->inputs.size, e->outputs.size};
  static const char* names[4] = {"arena", "constants", "inputs", "outputs"};
  for (int i = 0; i < 4; ++i)
    if (sizes[i] > d->max_storage_buffer_range) {
      ingot_vk_error_(error, error_size,
                      "the %s buffer (%llu bytes) exceeds device '%s''s maxStorageBufferRange (%llu)", names[i],
                      (unsigned long long)sizes[i], d->name, (unsigned long long)d->max_storage_buffer_range);
      return INGOT_UNSUPPORTED;
    }
  for (uint32_t s = 0; s < m->plan->step_count; ++s) {
    const ingot_step_t* step = &m->steps[s];
    if (step->kind != INGOT_STEP_DISPATCH) continue;
    if (step->wg_begin != 0 || step->wg_end == 0 || step->wg_end > d->max_compute_workgroup_count[0]) {
      ingot_vk_error_(error, error_size,
                      "step %u dispatches workgroups [%u, %u), which device '%s' cannot (at most %u)", s,
                      step->wg_begin, step->wg_end, d->name, d->max_compute_workgroup_count[0]);
      return INGOT_UNSUPPORTED;
    }
    if (step->binding_count * 4u > h->push_constant_bytes) {
      ingot_vk_error_(error, error_size, "step %u has more bindings than push constants", s);
      return INGOT_UNSUPPORTED;
    }
    for (uint32_t i = 0; i < step->binding_count; ++i) {
      VkBuffer buffer;
      uint64_t offset;
      ingot_vk_locate_(e, &m->bindings[step->binding_first + i], &buffer, &offset);
      if (offset % 4u != 0 || offset / 4u > UINT32_MAX) {
        ingot_vk_error_(error, error_size, "step %u binding %u is not at a 4-byte offset", s, i);
        return INGOT_UNSUPPORTED;
      }
    }
  }
  return INGOT_OK;
}

static ingot_status_t ingot_vk_create_(ingot_vulkan_executable_t* e, int device_index, char* error, size_t error_size) {
  const ingot_module_t* m = e->module;
  INGOT_RETURN_IF_ERROR(ingot_vk_create_instance_(&e->instance, &e->messenger, &e->destroy_messenger,
                                                  &e->validation_errors, error, error_size));
  VkPhysicalDevice* devices = NULL;
  uint32_t count = 0;
  ingot_status_t status = ingot_vk_physical_devices_(e->instance, &devices, &count, error, error_size);
  if (status != INGOT_OK) {
    free(devices);
    return status;
  }
  ingot_vulkan_device_info_t info;
  int chosen = -1;
  if (device_index >= 0) {
    if ((uint32_t)device_index >= count) {
      ingot_vk_error_(error, error_size, "--device=%d: there %s %u Vulkan device%s (0..%u)", device_index,
                      count == 1 ? "is" : "are", count, count == 1 ? "" : "s", count - 1);
      free(devices);
      return INGOT_INVALID_ARGUMENT;
    }
    chosen = device_index;
  } else {
    int best_rank = 99;
    for (uint32_t i = 0; i < count; ++i) {
      ingot_vk_describe_(devices[i], &info);
      if (info.has_compute_queue && ingot_vk_rank_(info.type) < best_rank) {
        best_rank = ingot_vk_rank_(info.type);
        chosen = (int)i;
      }
    }
  }
  if (chosen < 0) {
    ingot_vk_error_(error, error_size, "no Vulkan device with a compute queue");
    free(devices);
    return INGOT_UNSUPPORTED;
  }
  e->physical = devices[chosen];
  free(devices);
  ingot_vk_describe_(e->physical, &info);
  e->stats.device_index = (uint32_t)chosen;
  snprintf(e->stats.device_name, sizeof(e->stats.device_name), "%s", info.name);
  if (!info.has_compute_queue) {
    ingot_vk_error_(error, error_size, "device '%s' has no compute queue", info.name);
    return INGOT_UNSUPPORTED;
  }

  /* Device and queue. */
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(e->physical, &nq, NULL);
  VkQueueFamilyProperties families[32];
  if (nq > 32) nq = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(e->physical, &nq, families);
  e->queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < nq && e->queue_family == UINT32_MAX; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) e->queue_family = i;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = e->queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkDeviceCreateInfo dev = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dev.queueCreateInfoCount = 1;
  dev.pQueueCreateInfos = &queue;
  INGOT_VK_CHECK(vkCreateDevice(e->physical, &dev, NULL, &e->device), "vkCreateDevice");
  vkGetDeviceQueue(e->device, e->queue_family, 0, &e->queue);

  /* Buffers: the arena and constants prefer device memory; inputs and outputs are
   * host-visible and coherent, each tensor at a 64-byte offset. */
  const uint32_t ni = m->signature->input_count, no = m->signature->output_count;
  e->input_offsets = (uint64_t*)calloc(ni + 1, sizeof(uint64_t));
  e->output_offsets = (uint64_t*)calloc(no + 1, sizeof(uint64_t));
  if (!e->input_offsets || !e->output_offsets) {
    ingot_vk_error_(error, error_size, "out of memory");
    return INGOT_UNSUPPORTED;
  }
  uint64_t in_bytes = 0, out_bytes = 0;
  for (uint32_t i = 0; i < ni; ++i) {
    e->input_offsets[i] = in_bytes;
    in_bytes = ingot_vk_align_(in_bytes + m->inputs[i].byte_size);
  }
  for (uint32_t i = 0; i < no; ++i) {
    e->output_offsets[i] = out_bytes;
    out_bytes = ingot_vk_align_(out_bytes + m->outputs[i].byte_size);
  }
  const VkBufferUsageFlags storage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  const VkMemoryPropertyFlags device_first[] = {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0};
  const VkMemoryPropertyFlags constants_first[] = {
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      0};
  const VkMemoryPropertyFlags host_first[] = {
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0};
  INGOT_RETURN_IF_ERROR(ingot_vk_buffer_(e, ingot_vk_align_(m->plan->arena_bytes) + 64, storage, device_first,
                                         &e->arena, "arena", error, error_size));
  INGOT_RETURN_IF_ERROR(ingot_vk_buffer_(e, ingot_vk_align_(m->constants_size) + 64, storage, constants_first,
                                         &e->constants, "constants", error, error_size));
  INGOT_RETURN_IF_ERROR(
      ingot_vk_buffer_(e, in_bytes + 64, storage, host_first, &e->inputs, "inputs", error, error_size));
  INGOT_RETURN_IF_ERROR(
      ingot_vk_buffer_(e, out_bytes + 64, storage, host_first, &e->outputs, "outputs", error, error_size));
  if (e->inputs.mapped == NULL || e->outputs.mapped == NULL) {
    ingot_vk_error_(error, error_size, "device '%s' has no host-visible memory for inputs and outputs", info.name);
    return INGOT_UNSUPPORTED;
  }
  INGOT_RETURN_IF_ERROR(ingot_vk_check_module_(e, &info, error, error_size));

  /* Commands, fence and (when the queue has them) timestamps. */
  VkCommandPoolCreateInfo pool = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.queueFamilyIndex = e->queue_family;
  INGOT_VK_CHECK(vkCreateCommandPool(e->device, &pool, NULL, &e->command_pool), "vkCreateCommandPool");
  VkFenceCreateInfo fence = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  INGOT_VK_CHECK(vkCreateFence(e->device, &fence, NULL, &e->fence), "vkCreateFence");
  INGOT_RETURN_IF_ERROR(ingot_vk_upload_constants_(e, error, error_size));
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(e->physical, &props);
  if (families[e->queue_family].timestampValidBits > 0 && props.limits.timestampPeriod > 0) {
    VkQueryPoolCreateInfo q = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = 2;
    if (vkCreateQueryPool(e->device, &q, NULL, &e->timestamps) == VK_SUCCESS)
      e->timestamp_period_ns = props.limits.timestampPeriod;
  }

  /* One descriptor set: bindings 0..3 are the arena, constants, inputs and outputs
   * (ingot_base_t order), whole buffers; offsets travel as push constants, so
   * minStorageBufferOffsetAlignment never applies. */
  VkDescriptorSetLayoutBinding bindings[4];
  memset(bindings, 0, sizeof(bindings));
  for (uint32_t i = 0; i < 4; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.bindingCount = 4;
  set.pBindings = bindings;
  INGOT_VK_CHECK(vkCreateDescriptorSetLayout(e->device, &set, NULL, &e->set_layout), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, m->spirv->push_constant_bytes};
  VkPipelineLayoutCreateInfo layout = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &e->set_layout;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &range;
  INGOT_VK_CHECK(vkCreatePipelineLayout(e->device, &layout, NULL, &e->pipeline_layout), "vkCreatePipelineLayout");
  VkDescriptorPoolSize pool_size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4};
  VkDescriptorPoolCreateInfo dp = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = 1;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &pool_size;
  INGOT_VK_CHECK(vkCreateDescriptorPool(e->device, &dp, NULL, &e->descriptor_pool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo ds = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ds.descriptorPool = e->descriptor_pool;
  ds.descriptorSetCount = 1;
  ds.pSetLayouts = &e->set_layout;
  INGOT_VK_CHECK(vkAllocateDescriptorSets(e->device, &ds, &e->descriptor_set), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo buffers[4] = {{e->arena.buffer, 0, VK_WHOLE_SIZE},
                                       {e->constants.buffer, 0, VK_WHOLE_SIZE},
                                       {e->inputs.buffer, 0, VK_WHOLE_SIZE},
                                       {e->outputs.buffer, 0, VK_WHOLE_SIZE}};
  VkWriteDescriptorSet writes[4];
  memset(writes, 0, sizeof(writes));
  for (uint32_t i = 0; i < 4; ++i) {
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = e->descriptor_set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &buffers[i];
  }
  vkUpdateDescriptorSets(e->device, 4, writes, 0, NULL);

  /* One compute pipeline per SPIR-V kernel. */
  e->pipeline_count = m->spirv->kernel_count;
  e->pipelines = (VkPipeline*)calloc(e->pipeline_count + 1, sizeof(VkPipeline));
  if (e->pipelines == NULL) {
    ingot_vk_error_(error, error_size, "out of memory");
    return INGOT_UNSUPPORTED;
  }
  for (uint32_t k = 0; k < e->pipeline_count; ++k) {
    const ingot_spirv_kernel_t* kernel = &m->spirv_kernels[k];
    VkShaderModuleCreateInfo sm = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    sm.codeSize = kernel->code_size;
    sm.pCode = (const uint32_t*)(m->spirv_section + kernel->code_offset);
    VkShaderModule shader;
    INGOT_VK_CHECK(vkCreateShaderModule(e->device, &sm, NULL, &shader), "vkCreateShaderModule");
    VkComputePipelineCreateInfo cp = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cp.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cp.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cp.stage.module = shader;
    cp.stage.pName = "main";
    cp.layout = e->pipeline_layout;
    VkResult r = vkCreateComputePipelines(e->device, VK_NULL_HANDLE, 1, &cp, NULL, &e->pipelines[k]);
    vkDestroyShaderModule(e->device, shader, NULL);
    if (r != VK_SUCCESS) {
      ingot_vk_error_(error, error_size, "Vulkan: cannot create the pipeline of kernel %u: %s", k,
                      ingot_vk_result_name_(r));
      return INGOT_UNSUPPORTED;
    }
  }
  e->stats.pipelines = e->pipeline_count;
  e->stats.submits_per_invoke = 1;
  e->stats.timestamp_period_ns = e->timestamp_period_ns;
  return ingot_vk_record_(e, error, error_size);
}

ingot_status_t ingot_vulkan_executable_create(const ingot_module_t* module, int device_index,
                                              ingot_vulkan_executable_t** out, char* error, size_t error_size) {
  if (out == NULL) return INGOT_INVALID_ARGUMENT;
  *out = NULL;
  if (module == NULL || module->plan == NULL) return INGOT_INVALID_ARGUMENT;
  if (module->spirv == NULL || module->header->arch != INGOT_ARCH_VULKAN) {
    ingot_vk_error_(error, error_size, "module is not for a Vulkan device");
    return INGOT_INVALID_ARGUMENT;
  }
  if (module->constants == NULL && module->constants_size > 0) {
    ingot_vk_error_(error, error_size, "module weights are not set");
    return INGOT_INVALID_ARGUMENT;
  }
  ingot_vulkan_executable_t* e = (ingot_vulkan_executable_t*)calloc(1, sizeof(*e));
  if (e == NULL) return INGOT_UNSUPPORTED;
  e->module = module;
  e->last_device_ns = -1;
  ingot_status_t status = ingot_vk_create_(e, device_index, error, error_size);
  if (status != INGOT_OK) {
    ingot_vulkan_executable_destroy(e);
    return status;
  }
  *out = e;
  return INGOT_OK;
}

ingot_status_t ingot_vulkan_invoke(ingot_vulkan_executable_t* e, const void* const* inputs, void* const* outputs,
                                   char* error, size_t error_size) {
  if (e == NULL) return INGOT_INVALID_ARGUMENT;
  const ingot_module_t* m = e->module;
  const uint32_t ni = m->signature->input_count, no = m->signature->output_count;
  if ((ni > 0 && inputs == NULL) || (no > 0 && outputs == NULL)) return INGOT_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < ni; ++i) {
    if (inputs[i] == NULL) return INGOT_INVALID_ARGUMENT;
    memcpy((uint8_t*)e->inputs.mapped + e->input_offsets[i], inputs[i], (size_t)m->inputs[i].byte_size);
  }
  for (uint32_t i = 0; i < no; ++i)
    if (outputs[i] == NULL) return INGOT_INVALID_ARGUMENT;
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &e->commands;
  INGOT_VK_CHECK(vkQueueSubmit(e->queue, 1, &submit, e->fence), "vkQueueSubmit");
  VkResult r = vkWaitForFences(e->device, 1, &e->fence, VK_TRUE, INGOT_VK_FENCE_TIMEOUT_NS);
  if (r != VK_SUCCESS) {
    ingot_vk_error_(error, error_size, "Vulkan: the device did not finish the plan: %s", ingot_vk_result_name_(r));
    return INGOT_UNSUPPORTED;
  }
  INGOT_VK_CHECK(vkResetFences(e->device, 1, &e->fence), "vkResetFences");
  for (uint32_t i = 0; i < no; ++i)
    memcpy(outputs[i], (const uint8_t*)e->outputs.mapped + e->output_offsets[i], (size_t)m->outputs[i].byte_size);
  if (e->timestamps) {
    uint64_t t[2];
    if (vkGetQueryPoolResults(e->device, e->timestamps, 0, 2, sizeof(t), t, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) ==
        VK_SUCCESS)
      e->last_device_ns = (double)(t[1] - t[0]) * e->timestamp_period_ns;
  }
  return INGOT_OK;
}

double ingot_vulkan_last_device_ns(const ingot_vulkan_executable_t* e) { return e ? e->last_device_ns : -1; }

void ingot_vulkan_executable_stats(const ingot_vulkan_executable_t* e, ingot_vulkan_stats_t* out) {
  if (out == NULL) return;
  if (e == NULL) {
    memset(out, 0, sizeof(*out));
    return;
  }
  *out = e->stats;
}

uint32_t ingot_vulkan_validation_errors(const ingot_vulkan_executable_t* e) { return e ? e->validation_errors : 0; }

void ingot_vulkan_executable_destroy(ingot_vulkan_executable_t* e) {
  if (e == NULL) return;
  if (e->device) {
    vkDeviceWaitIdle(e->device);
    for (uint32_t k = 0; k < e->pipeline_count; ++k)
      if (e->pipelines[k]) vkDestroyPipeline(e->device, e->pipelines[k], NULL);
    if (e->timestamps) vkDestroyQueryPool(e->device, e->timestamps, NULL);
    if (e->fence) vkDestroyFence(e->device, e->fence, NULL);
    if (e->command_pool) vkDestroyCommandPool(e->device, e->command_pool, NULL);
    if (e->descriptor_pool) vkDestroyDescriptorPool(e->device, e->descriptor_pool, NULL);
    if (e->pipeline_layout) vkDestroyPipelineLayout(e->device, e->pipeline_layout, NULL);
    if (e->set_layout) vkDestroyDescriptorSetLayout(e->device, e->set_layout, NULL);
    ingot_vk_buffer_free_(e, &e->arena);
    ingot_vk_buffer_free_(e, &e->constants);
    ingot_vk_buffer_free_(e, &e->inputs);
    ingot_vk_buffer_free_(e, &e->outputs);
    vkDestroyDevice(e->device, NULL);
  }
  if (e->messenger && e->destroy_messenger) e->destroy_messenger(e->instance, e->messenger, NULL);
  if (e->instance) vkDestroyInstance(e->instance, NULL);
  free(e->pipelines);
  free(e->input_offsets);
  free(e->output_offsets);
  free(e);
}
