/* The one place that picks kernels and tile sizes per device, checked against its limits. */
#ifndef VKBERT_TUNE_H
#define VKBERT_TUNE_H

#include "shader_variants.h"
#include "vk/vk.h"

/* ---- the tuning variables (tune_env.c), read once when the context is made ---- */
typedef enum vkb_env_kernels {
    VKB_KERNELS_BY_DEVICE,
    VKB_KERNELS_SIMD,
    VKB_KERNELS_GPU
} vkb_env_kernels;
typedef enum vkb_env_attention {
    VKB_ATTENTION_BY_TUNING,
    VKB_ATTENTION_FUSED,
    VKB_ATTENTION_UNFUSED
} vkb_env_attention;

/* VKBERT_MATMUL_TILES="wg_x,wg_y,tm,tn4[,bk]"; bk 16 when not given. */
/* VKBERT_INT8_PATH=dot|dequant: how int8 weights' matmuls run (tune.c). */
typedef enum vkb_env_int8 { VKB_INT8_BY_TUNING, VKB_INT8_DOT, VKB_INT8_DEQUANT } vkb_env_int8;

typedef struct vkb_env_tiles {
    bool set;
    uint32_t wg_x, wg_y, tm, tn4, bk;
} vkb_env_tiles;

/* The variables that steer kernel choices, which vkbert_bench_override may replace. */
typedef struct vkb_tuning_env {
    vkb_env_kernels kernels;     /* VKBERT_KERNELS=simd|gpu */
    vkb_env_attention attention; /* VKBERT_ATTENTION=fused|unfused */
    vkb_env_tiles tiles;         /* VKBERT_MATMUL_TILES */
    bool matmul_fallback;        /* VKBERT_MATMUL_FALLBACK=1 */
    bool simd_shuffle;           /* VKBERT_SIMD_SHUFFLE: false when 0 */
    vkb_env_int8 int8_path;      /* VKBERT_INT8_PATH=dot|dequant */
} vkb_tuning_env;

typedef struct vkb_tune_cache vkb_tune_cache;

/* ctx->tuning: what the context's kernel choices follow. vk keeps the pointer and never looks
 * into it; the context's makers (src/api/) make and free it. */
typedef struct vkb_tuning {
    vkb_tuning_env env;         /* the environment's, or an override's */
    vkb_tuning_env at_creation; /* what the environment said, for overrides to restore */
    vkb_tune_cache *cache;      /* this device's tuning results (tune_cache.c), or NULL */
} vkb_tuning;

/* Makes ctx->tuning from the tuning variables, before the device: a bad value fails, naming
 * the variable. Free it with vkb_tuning_free, also after a failure. */
vkbert_status vkb_tuning_create(vkbert_context *ctx);
/* Frees ctx->tuning and its cache; nothing when there is none. */
void vkb_tuning_free(vkbert_context *ctx);
/* Replaces one tuning variable of ctx->tuning->env by `value`, checked as at creation ("": as
 * if unset); NULL restores what the environment said at creation. */
vkbert_status vkb_tuning_override(vkbert_context *ctx, const char *name, const char *value);

/* Kernel families: `simd` for CPU-backed devices (texel-buffer reads, no shared memory, big
 * register tiles), `gpu` for GPUs (storage-buffer reads, shared memory where it pays). */
typedef enum vkb_family { VKB_FAMILY_GPU, VKB_FAMILY_SIMD } vkb_family;

/* The device's family, or the one VKBERT_KERNELS=gpu|simd forces. */
vkb_family vkb_tune_family(const vkbert_context *ctx);
const char *vkb_family_name(vkb_family family);

typedef struct vkb_matmul_tiles {
    vkb_family family;
    uint32_t wg_x, wg_y; /* workgroup size */
    uint32_t tm, tn4;    /* rows and vec4 columns per invocation */
    /* The block of C one workgroup computes (bm = wg_y * tm rows, bn = 4 * wg_x * tn4 columns)
     * and the depth of the gpu family's shared-memory slices of A and B. bk 0: no shared memory
     * (the simd family, or the gpu family's fallback, shaders/matmul.comp). */
    uint32_t bm, bn, bk;
} vkb_matmul_tiles;

/* `a_texels` and `b_texels`: how many vec4 the A and B bindings hold (texel views have a
 * limit of their own). VKBERT_MATMUL_TILES="wg_x,wg_y,tm,tn4[,bk]" overrides the choice (bk 0:
 * the gpu family's fallback); VKBERT_MATMUL_FALLBACK=1 makes the gpu family use its fallback. */
vkb_matmul_tiles vkb_tune_matmul(const vkbert_context *ctx, uint32_t m, uint32_t n, uint32_t k,
                                 uint64_t a_texels, uint64_t b_texels);
/* The same for `batch` products in one dispatch: more workgroups, so bigger tiles can pay. */
vkb_matmul_tiles vkb_tune_matmul_batched(const vkbert_context *ctx, uint32_t m, uint32_t n,
                                         uint32_t k, uint32_t batch, uint64_t a_texels,
                                         uint64_t b_texels);
/* Whether a kernel with `texel_bindings` uniform texel buffers among `bindings`, the largest
 * holding `texels` texels, fits the device: maxTexelBufferElements, and texel buffers count
 * as sampled images (maxPerStageDescriptorSampledImages) and all as resources
 * (maxPerStageResources). Where not, the op takes its storage-buffer variant. */
bool vkb_tune_texels_fit(const vkbert_context *ctx, uint32_t texel_bindings, uint32_t bindings,
                         uint64_t texels);
/* Writes a one-line description of the tiles to `out`, e.g. "gpu smem 64x64x16 wg 16x16 tile
 * 4x4", "gpu fallback wg 16x8 tile 4x4" or "simd wg 8x4 tile 16x16" (tile: rows x columns per
 * invocation). */
void vkb_matmul_describe(const vkb_matmul_tiles *t, char *out, size_t size);
/* Shared memory the gpu family's kernel needs for these tiles, in bytes (0 when bk is 0). */
uint32_t vkb_matmul_shared_bytes(const vkb_matmul_tiles *t);
/* Workgroup size of the row-wise softmax (a power of two). */
uint32_t vkb_tune_softmax_workgroup(const vkbert_context *ctx, uint32_t row_length);
/* Workgroup size (query rows) of the fused attention kernel. */
uint32_t vkb_tune_fused_workgroup(const vkbert_context *ctx, uint32_t seq_len);
/* Whether attention of this shape runs fused: forced by VKBERT_ATTENTION=fused|unfused, fused
 * whenever the scores (`score_bytes`) exceed a storage buffer or the memory budget, else the
 * device's preference. */
bool vkb_tune_attention_fused(const vkbert_context *ctx, uint64_t score_bytes);
/* Workgroup size of element-wise kernels. */
uint32_t vkb_tune_elementwise_workgroup(const vkbert_context *ctx);
/* Whether the kernel of `t->family` can run these tiles on this device: a compiled register
 * tile (simd) or a shared-memory tile within the limits (gpu, bk > 0). bm and bn are
 * recomputed. The tuning cache's entries pass through here at load and at every use. */
bool vkb_tune_tiles_fit(const vkbert_context *ctx, vkb_matmul_tiles *t);

/* ---- shader variants (tune_variants.c): which compiled module of an op runs ----
 * The modules and their axes are cmake/shader_variants.cmake's (the generated
 * shader_variants.h). */

/* The module of `set` answering to exactly `axes` and the register tile tm x tn4 (0, 0: none);
 * NULL where none was compiled. */
const vkb_spirv *vkb_variant_find(const vkb_variant_set *set, uint32_t axes, uint32_t tm,
                                  uint32_t tn4);
/* The module of `set` for the op's own `axes` on this device: with VKB_AXIS_SHARED_REDUCE where
 * the device has no subgroup arithmetic and the op has such modules. */
const vkb_spirv *vkb_tune_variant(const vkbert_context *ctx, const vkb_variant_set *set,
                                  uint32_t axes);
/* Whether rows can be shared by shuffles in subgroups of `lanes` in a workgroup of
 * `invocations` (VKBERT_SIMD_SHUFFLE, and the device's subgroups: vkb_subgroup_fits). */
bool vkb_tune_share_rows(const vkbert_context *ctx, uint32_t lanes, uint32_t invocations);
/* Snaps a simd register tile to the largest compiled one it covers (else the smallest). */
void vkb_tune_snap_simd(uint32_t *tm, uint32_t *tn4);
/* Whether the simd family has this register tile compiled in. */
bool vkb_tune_simd_compiled(uint32_t tm, uint32_t tn4);
/* The matmul module of `t`'s family (simd: its tile snapped, bm and bn recomputed) with B in
 * Q8_0 or not; `lanes`: the subgroup size it needs, 0 for any. */
const vkb_spirv *vkb_tune_matmul_module(const vkbert_context *ctx, vkb_matmul_tiles *t, bool q8,
                                        uint32_t *lanes);
/* How fused attention reads its rows: 0 (storage buffers), VKB_AXIS_TEXEL, or with
 * VKB_AXIS_SHUFFLE too (K and V shared by shuffles in a workgroup of one subgroup). */
uint32_t vkb_tune_fused_read(const vkbert_context *ctx, bool rows_half, uint64_t row_texels,
                             uint32_t workgroup);

/* ---- the tuning cache (tune_cache.c): what `vkbert tune` measured on this device ----
 *
 * One JSON file per device and driver (vkb_cache_path), read at context creation:
 *   {"vkbert_tune": 1,
 *    "device": {"name", "vendor_id", "device_id", "driver_version", "uuid"},
 *    "matmul": [{"family": "simd"|"gpu", "m", "n", "k", "batch",
 *                "wg_x", "wg_y", "tm", "tn4", "bk"}, ...],
 *    "attention": [{"family", "score_bytes", "fused": true|false}, ...],
 *    "int8_path": "dot"|"dequant"}
 * Other members (timings, shape names) are for people and ignored. A file that does not parse,
 * has another version or was written for another device is ignored whole; an entry that is
 * malformed or exceeds the device's limits is ignored alone. Entries apply to their family
 * only. */
/* Reads this device's tuning cache into ctx->tuning->cache (NULL when there is none or it is
 * invalid). */
void vkb_tune_cache_load(vkbert_context *ctx);
void vkb_tune_cache_free(vkbert_context *ctx);
/* The measured tiles for the nearest measured product of `family`: one with at least half
 * the entry's outputs (m * n * batch) and a depth within 4x of its k. false: none applies. */
bool vkb_tune_cache_matmul(const vkbert_context *ctx, vkb_family family, uint32_t m, uint32_t n,
                           uint32_t k, uint32_t batch, vkb_matmul_tiles *out);
/* 1 fused, 0 unfused, as measured for the device's family (vkb_tune_family) at the nearest
 * size of scores within 4x; -1: unknown. */
int vkb_tune_cache_fused(const vkbert_context *ctx, uint64_t score_bytes);
/* 1 "dot", 0 "dequant" as measured for int8 weights' matmuls on this device (a "dot" where
 * ctx->int8_dot is false is ignored); -1: unknown. */
int vkb_tune_cache_int8_dot(const vkbert_context *ctx);
/* Whether int8 weights' matmuls in layers made now run through integer dot products
 * (VKBERT_INT8_PATH, else the cache, else: where the driver says they are accelerated).
 * VKBERT_INT8_PATH=dot on a device without them (ctx->int8_dot false) is
 * VKBERT_ERROR_DEVICE_LIMIT, said. */
vkbert_status vkb_tune_int8_dot(vkbert_context *ctx, bool *dot);
/* Checks `json` (the matmul and attention arrays above), adds the version and the device and
 * the file's entries of any family `json` does not mention, writes it to this device's file
 * and makes it ctx's tuning cache. `path` may be NULL. */
vkbert_status vkb_tune_cache_save(vkbert_context *ctx, const char *json, char *path,
                                  size_t path_size);

#endif
