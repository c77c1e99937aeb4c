/* The Vulkan runtime: loading, the device, memory, pipelines, recording. Knows nothing of
 * the kernels' choices or of BERT. Internal to the library. */
#ifndef VKBERT_VK_H
#define VKBERT_VK_H

#include <volk.h>

#include "platform/platform.h"
#include "vkbert.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

struct vkb_tuning;

#define VKB_ERROR_SIZE 1024

/* Sub-allocation of one large VkDeviceMemory. Free ranges kept sorted by offset. */
typedef struct vkb_range_list {
    VkDeviceSize *offset, *size;
    uint32_t count, capacity;
} vkb_range_list;

typedef struct vkb_block {
    VkDeviceMemory memory;
    VkDeviceSize size;
    uint32_t type_index;
    uint8_t *mapped; /* NULL when not host visible */
    vkb_range_list free;
} vkb_block;

/* A buffer placed in a block. `mapped` is non-NULL when the host may read and write it. */
typedef struct vkb_buffer {
    VkBuffer buffer;
    VkDeviceSize size;
    vkb_block *block;
    VkDeviceSize block_offset;
    uint8_t *mapped;
} vkb_buffer;

/* A range of a buffer, as bound to one descriptor. `format` matters for texel bindings only:
 * VK_FORMAT_UNDEFINED means vec4 of fp32 (R32G32B32A32_SFLOAT). */
typedef struct vkb_view {
    VkBuffer buffer;
    VkDeviceSize offset, size;
    VkFormat format;
} vkb_view;

#define VKB_MAX_SPEC 16

typedef struct vkb_pipeline {
    const struct vkb_spirv *shader; /* the embedded module it was made from */
    uint32_t spec[VKB_MAX_SPEC];
    uint32_t spec_count;
    VkDescriptorType types[4]; /* of each binding */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t binding_count;
    uint32_t subgroup_size; /* vkb_kernel's: part of the pipeline's identity */
    /* How that size was had (vk_pipeline.c's subgroup_request), for tests. */
    VkPipelineShaderStageCreateFlags stage_flags;
    uint32_t required_subgroup_size; /* 0: none chained */
} vkb_pipeline;

/* ---- the environment, read once when the context is made (vk_env.c) ---- */
#define VKB_PATH_MAX 4096

/* The device's variables. The tuning variables are tune's (src/tune/tune_env.c), read at the
 * same moment. */
typedef struct vkb_env {
    bool force_staging;    /* VKBERT_FORCE_STAGING=1 */
    bool validation;       /* VKBERT_VALIDATION=1 */
    uint64_t timeout_ms;   /* VKBERT_TIMEOUT_MS; 0 when unset */
    uint32_t load_threads; /* VKBERT_LOAD_THREADS (1 to 64); 0 when unset */
    char device[256];      /* VKBERT_DEVICE; "" when unset */
    char limits[1024];     /* VKBERT_LIMITS; "" when unset */
    /* vkbert_context_options.cache_dir, else VKBERT_CACHE_DIR, else the home cache
     * (vk_cache.c); "" when caching is off. */
    char cache_dir[VKB_PATH_MAX];
} vkb_env;

/* Test hooks that make faults happen on demand: the Nth buffer creation fails with
 * out-of-memory (counting from 1 at the reset of allocation_count), the next submit's wait
 * reports VK_ERROR_DEVICE_LOST, or every pass after the first lost_after_passes fails as on a
 * lost device (VKBERT_FAULT_LOST_AFTER_PASSES, read with the environment; -1: off). A pass is
 * a submit its caller marks as one (vkb_fault_pass): vk counts them, the caller knows what
 * they are. */
typedef struct vkb_faults {
    uint32_t allocation_count, fail_allocation_at;
    bool fail_next_submit;
    int64_t lost_after_passes;
    uint64_t passes; /* marked so far */
} vkb_faults;

/* One recorded dispatch: what an op prepares and the recorder plays. */
typedef struct vkb_dispatch {
    const char *name;
    const vkb_pipeline *pipeline;
    VkDescriptorSet set;
    VkBufferView texel_views[4]; /* owned: vkb_dispatch_release destroys them */
    uint8_t push[128];
    uint32_t push_size;
    uint32_t groups[3];
} vkb_dispatch;

struct vkbert_context {
    plat_mutex *lock; /* held by every public call on the context (src/api/api_call.c) */
    uint64_t serial;  /* unique in the process, never reused (vk_error.c) */
    vkb_env env;      /* the device's VKBERT_* as they were when the context was made */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    /* The instance, device and queue are the caller's (vkbert_context_create_vulkan): vkbert
     * destroys none of them and waits on its queue, never on the whole device. */
    bool external;
    uint32_t instance_version; /* the instance's apiVersion, at most 1.3 */
    VkCommandPool command_pool;
    VkCommandBuffer transfer_cmd;
    VkFence fence;
    VkPipelineCache pipeline_cache;
    size_t pipeline_cache_loaded;     /* bytes of driver data it started from (vk_cache.c) */
    uint64_t pipeline_cache_checksum; /* of those bytes: unchanged data is not written back */
    /* The tuning variables and this device's tuning cache: tune's (src/tune/tune_env.c), made
     * and freed with the context; vk never looks inside. */
    struct vkb_tuning *tuning;
    double startup_ms;  /* vkbert_context_create, start to end */
    double pipeline_ms; /* spent in vkCreateComputePipelines so far */

    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory_props;
    VkPhysicalDeviceSubgroupProperties subgroup;
    /* Subgroup size control (VK_EXT_subgroup_size_control, core in Vulkan 1.3), each feature
     * true only when the device has it, vkbert enabled it and no switch turned it off:
     * computeFullSubgroups (REQUIRE_FULL_SUBGROUPS_BIT) and subgroupSizeControl (a required
     * subgroup size, in the stages subgroup_control.requiredSubgroupSizeStages names). */
    VkPhysicalDeviceSubgroupSizeControlProperties subgroup_control; /* zero without either */
    bool full_subgroups, subgroup_size_control;
    vkbert_device_info info;
    bool subgroup_arithmetic; /* subgroupAdd/Max usable in compute */
    bool fp16_texels;         /* R16G16B16A16_SFLOAT uniform texel buffers */
    /* 4x8-bit packed signed integer dot products in shaders (VK_KHR_shader_integer_dot_product
     * or Vulkan 1.3's shaderIntegerDotProduct), enabled on the device; false on a caller's
     * device (vkbert_context_create_vulkan cannot know what it enabled) and where the switch
     * integer_dot_product=0 (vk_limits.c) turned it off. int8_dot_fast: the driver says
     * integerDotProduct4x8BitPackedSignedAccelerated. shader_int8: the shaderInt8 feature,
     * recorded for `vkbert info`-like reports; the packed dot does not need it. */
    bool int8_dot, int8_dot_fast, shader_int8;
    bool host_visible_device_memory; /* tensors live in mapped memory: no staging copies */
    bool timestamps;
    double timestamp_ns; /* nanoseconds per tick */

    /* Limits beyond VkPhysicalDeviceLimits (vk_limits.c), capped like it. */
    VkDeviceSize max_allocation; /* maxMemoryAllocationSize */
    VkDeviceSize budget;         /* device memory the context may hold: the heap, or less */

    /* `lost`: a fence wait failed or timed out; every later call fails without touching the
     * device. */
    bool lost, settled;
    uint64_t timeout_ns;
    vkb_faults faults; /* the test hooks */

    /* Tables that grow: buffers and dispatches keep pointers to their entries, so each entry
     * is allocated alone and never moves. */
    vkb_block **blocks;
    uint32_t block_count, block_capacity;
    VkDeviceSize allocated_bytes; /* of the blocks (VkDeviceMemory) */
    VkDeviceSize in_use_bytes;    /* of the live buffers placed in them */
    vkb_buffer staging;

    vkb_pipeline **pipelines;
    uint32_t pipeline_count, pipeline_capacity;

    uint32_t validation_count;
    char validation_first[VKB_ERROR_SIZE];
    char error[VKB_ERROR_SIZE];
};

/* Validation messages of every context in the process, and the text of the latest (racy
 * between threads; for tests). */
extern atomic_uint vkb_validation_total;
extern char vkb_validation_last[VKB_ERROR_SIZE];

/* Waits for the device to finish work left running by a timed-out wait, so that what is being
 * destroyed is no longer in use. Nothing to do for a healthy context. */
void vkb_settle(vkbert_context *ctx);

/* ---- the context lock (vk_lock.c) ---- */
/* Made and freed by the public calls that make and destroy the context (src/api/api_call.c),
 * which also take it around every public call; taken here too where work runs on a thread
 * that may not hold it (vkb_write), and let go by callers that wait with it held. */
void vkb_lock(const vkbert_context *ctx); /* NULL: nothing to lock */
void vkb_unlock(const vkbert_context *ctx);

/* ---- errors: set the context's message and return the status ---- */
vkbert_status vkb_fail(vkbert_context *ctx, vkbert_status status, const char *fmt, ...)
    PLAT_PRINTF(3, 4);
vkbert_status vkb_fail_vk(vkbert_context *ctx, VkResult result, const char *what);
const char *vkb_result_name(VkResult result);
/* The message of this thread's last failure on `ctx` when it was the last context this
 * thread failed on, else the context's own last message. */
const char *vkb_last_error(const vkbert_context *ctx);
/* Host work on a context's buffers by a thread that may not hold its lock (a load's workers):
 * a writer keeps its thread's first failure and message for the caller to set on the context
 * under the lock, so that no worker touches the context's message. A locked writer (the
 * calling thread holds the lock) fails on the context directly. */
typedef struct vkb_writer {
    vkbert_context *ctx;
    bool locked;
    vkbert_status status; /* the first failure of an unlocked writer, else VKBERT_OK */
    char message[VKB_ERROR_SIZE];
} vkb_writer;
vkb_writer vkb_writer_of(vkbert_context *ctx, bool locked);
/* The failure on the writer (its first is kept); returns `status`. */
vkbert_status vkb_write_fail(vkb_writer *w, vkbert_status status, const char *fmt, ...)
    PLAT_PRINTF(3, 4);
/* vkb_buffer_upload for a writer: a mapped buffer, which only this load uses, takes a memcpy
 * without the lock; a staged copy takes the lock (an unlocked writer's thread then holds it
 * for that copy only). */
vkbert_status vkb_write(vkb_writer *w, vkb_buffer *dst, VkDeviceSize offset, const void *src,
                        VkDeviceSize size);
/* Thread-local message for calls made without a context. */
vkbert_status vkb_fail_global(vkbert_status status, const char *fmt, ...) PLAT_PRINTF(2, 3);
const char *vkb_global_error(void);

/* ---- the environment (vk_env.c) ---- */
/* Reads and checks the device's VKBERT_* variables into ctx->env; a bad value fails, naming the
 * variable. Part of every way of making a context: nothing reads the environment later.
 * `cache_dir` (the context option; NULL or "": none) overrides VKBERT_CACHE_DIR. */
vkbert_status vkb_env_read(vkbert_context *ctx, const char *cache_dir);
/* The parsers every layer's variables share. An empty variable counts as unset, as a shell's
 * `VAR= cmd` means it. */
bool vkb_env_unset(const char *value);
/* Fails on ctx: `name is "value": wanted`. */
vkbert_status vkb_env_bad(vkbert_context *ctx, const char *name, const char *value,
                          const char *wanted);
/* 0 or 1; `fallback` when unset. */
vkbert_status vkb_env_switch(vkbert_context *ctx, const char *name, const char *value,
                             bool fallback, bool *out);
/* Unsigned decimal digits at `at`, at most `max`; *end is where they stop. */
bool vkb_env_count(const char *at, const char **end, uint64_t max, uint64_t *out);

/* ---- device (vk_device.c) ---- */
vkbert_status vkb_load_vulkan(void);
vkbert_status vkb_context_init(vkbert_context *ctx, const vkbert_context_options *options);
void vkb_context_release(vkbert_context *ctx);
void vkb_describe_device(VkPhysicalDevice device, vkbert_device_info *info);
/* The same for a device of an instance made with `instance_api`. */
void vkb_describe_device_at(VkPhysicalDevice device, uint32_t instance_api,
                            vkbert_device_info *info);
/* The pieces of vkb_context_init that an external device shares: properties and features of
 * ctx->physical (as far as ctx->instance_version allows), the command pool, fence and
 * pipeline cache on ctx->device, the fence timeout. */
void vkb_read_device(vkbert_context *ctx);
/* ctx->int8_dot, int8_dot_fast and shader_int8 from the physical device (vk_int8.c); a
 * device vkbert makes only, before vkb_limits_init (whose switch may turn int8_dot off). */
void vkb_read_int8_dot(vkbert_context *ctx);
/* Whether the physical device lists the device extension `name`. */
bool vkb_device_has_extension(VkPhysicalDevice device, const char *name);
/* Where ctx->int8_dot: its extension appended to `extensions` (unless core) and `feature`
 * filled to enable shaderIntegerDotProduct, chained before `next`; returns the chain's head. */
const void *vkb_int8_dot_chain(const vkbert_context *ctx,
                               VkPhysicalDeviceShaderIntegerDotProductFeatures *feature,
                               const void *next, const char **extensions, uint32_t *count);
vkbert_status vkb_create_device_objects(vkbert_context *ctx);
bool vkb_queue_has_timestamps(const vkbert_context *ctx);
uint64_t vkb_timeout_ns(const vkbert_context *ctx, const vkbert_context_options *options);
/* A messenger that counts validation messages on `ctx`. */
VkDebugUtilsMessengerCreateInfoEXT vkb_messenger_info(vkbert_context *ctx);

/* ---- the caller's device (vk_external.c) ---- */
struct vkbert_vulkan_device;
/* A context on the caller's instance, device and queue, with the features the caller's
 * VkDeviceCreateInfo enabled (and the device has). */
vkbert_status vkb_context_init_external(vkbert_context *ctx, const vkbert_context_options *options,
                                        const struct vkbert_vulkan_device *device);
/* Destroys what vkbert made on the caller's instance (its messenger). */
void vkb_external_release(vkbert_context *ctx);
/* Waits until vkbert's work is done: the device when it is vkbert's, else the queue (the
 * caller's other queues are not vkbert's to synchronize). */
void vkb_wait_idle(vkbert_context *ctx);
/* Every device the loader lists, described (*infos malloc'd, full size); messages go to the
 * thread's slot. */
vkbert_status vkb_list_devices(vkbert_device_info **infos, uint32_t *count);

/* Reads maxMemoryAllocationSize and the heap size, then lowers the limits and turns off
 * features by VKBERT_LIMITS and `option` (both "item,...": name=value, a feature switch,
 * `minimum`; vkbert.h lists them): an unknown name or a bad value is an error. */
vkbert_status vkb_limits_init(vkbert_context *ctx, const char *option);
/* Fails with VKBERT_ERROR_DEVICE_LIMIT, naming the limit, when a pipeline of `shader` with
 * these bindings (NULL types: all storage buffers) and push constants exceeds a per-stage
 * descriptor limit, maxPushConstantsSize or maxBoundDescriptorSets. */
vkbert_status vkb_check_layout(vkbert_context *ctx, const char *shader,
                               const VkDescriptorType *types, uint32_t binding_count,
                               uint32_t push_size);
/* VKBERT_ERROR_DEVICE_LOST once the device was lost or a wait timed out. */
vkbert_status vkb_check_alive(vkbert_context *ctx);

/* ---- on-disk caches (vk_cache.c) ---- */
/* The directory from `setting` (the cache_dir option's or VKBERT_CACHE_DIR's value; "off"
 * disables, NULL or "" means unset), else $XDG_CACHE_HOME/vkbert, else $HOME/.cache/vkbert; false
 * when caching is off or there is no home. For vkb_env_read: the home is looked up in the
 * environment. */
bool vkb_cache_dir_resolve(const char *setting, char *out, size_t size);
/* The context's directory, as vkb_env_read resolved it; false when caching is off. */
bool vkb_cache_dir(const vkbert_context *ctx, char *out, size_t size);
typedef enum vkb_cache_kind { VKB_CACHE_PIPELINES, VKB_CACHE_TUNE } vkb_cache_kind;
/* This device's file of that kind in the directory; false when caching is off. */
bool vkb_cache_path(const vkbert_context *ctx, vkb_cache_kind kind, char *out, size_t size);
/* A regular file of at most `max` bytes, NUL-terminated (malloc'd); NULL on any failure. */
void *vkb_cache_read(const char *path, size_t max, size_t *size);
/* Replaces the file atomically, making its directory (0700) as needed: 0 or an errno. */
int vkb_cache_write(const char *path, const void *data, size_t size);
/* The pipeline cache, from this device's file when one is valid. Fails only when Vulkan
 * cannot make an empty cache either. */
vkbert_status vkb_pipeline_cache_create(vkbert_context *ctx);
/* Writes the pipeline cache to its file when pipelines were made; failures are ignored. */
void vkb_pipeline_cache_save(vkbert_context *ctx);

/* ---- memory (vk_memory.c) ---- */
/* Decides whether tensors live in host-visible device memory (VKBERT_FORCE_STAGING=1 says no). */
void vkb_memory_init(vkbert_context *ctx);
/* Device-local buffer, mapped when the device has host-visible device memory. */
vkbert_status vkb_buffer_create(vkbert_context *ctx, VkDeviceSize size, vkb_buffer *out);
/* Host-visible buffer (staging). */
vkbert_status vkb_buffer_create_host(vkbert_context *ctx, VkDeviceSize size, vkb_buffer *out);
void vkb_buffer_destroy(vkbert_context *ctx, vkb_buffer *buffer);
void vkb_memory_release(vkbert_context *ctx);
/* A table (`capacity` entries of `item` bytes, `count` used) with room for one more: `table`
 * itself, or it moved to a doubled allocation; NULL when out of host memory (then `table` is
 * unchanged and still owned by the caller). */
void *vkb_table_room(void *table, uint32_t *capacity, uint32_t count, size_t item);
/* Copies between host and a buffer, through the staging buffer when it is not mapped. */
vkbert_status vkb_buffer_upload(vkbert_context *ctx, vkb_buffer *dst, VkDeviceSize offset,
                                const void *src, VkDeviceSize size);
vkbert_status vkb_buffer_download(vkbert_context *ctx, const vkb_buffer *src, VkDeviceSize offset,
                                  void *dst, VkDeviceSize size);
vkb_view vkb_whole(const vkb_buffer *buffer);
vkb_view vkb_sub(const vkb_buffer *buffer, VkDeviceSize offset, VkDeviceSize size);

/* ---- pipelines (vk_pipeline.c) ---- */
typedef struct vkb_spirv {
    const char *name;
    const uint32_t *code;
    size_t size; /* bytes */
} vkb_spirv;

/* The pipeline of `shader` with these bindings (NULL types: all storage buffers) and
 * specialization constants (ids 0..count-1, 32-bit each), made on first use and kept for the
 * context's life. */
vkbert_status vkb_pipeline_get(vkbert_context *ctx, const vkb_spirv *shader,
                               const VkDescriptorType *types, uint32_t binding_count,
                               uint32_t push_size, const uint32_t *spec, uint32_t spec_count,
                               const vkb_pipeline **out);
void vkb_pipelines_release(vkbert_context *ctx);

/* Whether a kernel sharing values by `operations` (VkSubgroupFeatureFlags) across subgroups
 * of `size` lanes can run in compute workgroups of `invocations`, x a multiple of `size`. */
bool vkb_subgroup_fits(const vkbert_context *ctx, uint32_t size, uint32_t invocations,
                       VkSubgroupFeatureFlags operations);

/* Fills `out`: the pipeline, a descriptor set from `pool` over `views` (one per binding), the
 * push constants. Group counts are the caller's. */
typedef struct vkb_kernel {
    const vkb_spirv *shader;
    const VkDescriptorType *types; /* NULL: every binding a storage buffer */
    const uint32_t *spec;
    uint32_t spec_count;
    const vkb_view *views;
    uint32_t view_count;
    const void *push;
    uint32_t push_size;
    /* 0, or the kernel needs its workgroup's x made of whole subgroups of exactly this many
     * lanes (it shares values by shuffles); x is a multiple of it. Ask vkb_subgroup_fits
     * first: the pipeline fails with VKBERT_ERROR_DEVICE_LIMIT where the device cannot. */
    uint32_t subgroup_size;
} vkb_kernel;
vkbert_status vkb_dispatch_prepare(vkbert_context *ctx, VkDescriptorPool pool,
                                   const vkb_kernel *kernel, vkb_dispatch *out);

/* Allocates the set of the dispatch's pipeline from `pool` and points its bindings at
 * `views`, making texel views (vec4 of float) where a binding is a uniform texel buffer. */
vkbert_status vkb_descriptor_set(vkbert_context *ctx, VkDescriptorPool pool, const vkb_view *views,
                                 vkb_dispatch *dispatch);
/* A pool for `sets` sets of up to 4 bindings of either type. */
vkbert_status vkb_descriptor_pool(vkbert_context *ctx, uint32_t sets, VkDescriptorPool *out);
/* Destroys the texel views the dispatch owns (its set goes with its pool). */
void vkb_dispatch_release(vkbert_context *ctx, vkb_dispatch *dispatch);

/* ---- recording and submission (vk_record.c) ---- */
/* A primary command buffer from the context's pool, to record once and replay. */
vkbert_status vkb_command_buffer(vkbert_context *ctx, VkCommandBuffer *out);
/* A pool of `count` timestamp queries. */
vkbert_status vkb_timestamp_pool(vkbert_context *ctx, uint32_t count, VkQueryPool *out);
/* Makes all earlier shader and transfer writes visible to later shader and transfer access. */
void vkb_cmd_barrier(VkCommandBuffer cmd);
/* Makes shader writes visible to host reads after the fence. */
void vkb_cmd_barrier_to_host(VkCommandBuffer cmd);
void vkb_cmd_dispatch(VkCommandBuffer cmd, const vkb_dispatch *dispatch);
vkbert_status vkb_submit_wait(vkbert_context *ctx, VkCommandBuffer cmd);
/* Submits `cmd` to signal `fence` (unsignalled) and returns at once. */
vkbert_status vkb_submit(vkbert_context *ctx, VkCommandBuffer cmd, VkFence fence);
/* The status of a vkWaitForFences on a submission: a timeout or a lost device marks the
 * context lost (vkb_check_alive). Call with the lock held; the wait itself need not be. */
vkbert_status vkb_wait_result(vkbert_context *ctx, VkResult result);
/* Counts one pass, a submit its caller marks as one; true when the test hook
 * VKBERT_FAULT_LOST_AFTER_PASSES says it fails: its wait is then to report a lost device, as a
 * real loss would, so that the same paths mark the context. */
bool vkb_fault_pass(vkbert_context *ctx);
/* An unsignalled fence. */
vkbert_status vkb_fence_create(vkbert_context *ctx, VkFence *out);
/* Group counts for `items` invocations in workgroups of `size`, spread over x and y (x is
 * capped at 65535 groups, the least every device allows, or the device's lower limit). */
void vkb_grid_1d(const vkbert_context *ctx, uint64_t items, uint32_t size, uint32_t groups[3]);
/* Fails with VKBERT_ERROR_DEVICE_LIMIT when a group count exceeds maxComputeWorkGroupCount. */
vkbert_status vkb_check_groups(vkbert_context *ctx, const vkb_dispatch *dispatch);
/* Fails with VKBERT_ERROR_DEVICE_LIMIT when a binding range exceeds maxStorageBufferRange. */
vkbert_status vkb_check_range(vkbert_context *ctx, VkDeviceSize bytes, const char *what);

#endif
