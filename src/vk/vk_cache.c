/* The on-disk caches: where they live, reading and atomic writing, and the pipeline cache that
 * outlives the context. A driver turns SPIR-V into machine code inside vkCreateComputePipelines,
 * which costs tens of milliseconds per pipeline on lavapipe and more on some GPUs; giving it
 * what it compiled last time saves that at every start (ncnn does the same).
 *
 * A cache is an optimisation and never a reason to fail: a missing, unreadable, damaged or
 * foreign file is ignored, and rewritten when the context ends. */
#include "vk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_PATH_MAX VKB_PATH_MAX
/* Far beyond what a few dozen compute pipelines take; a bigger file is not ours. */
#define PIPELINE_CACHE_MAX ((size_t)256 << 20)

/* vkbert's trailer after the driver's data: the data's length and a checksum. The header of
 * VkPipelineCacheHeaderVersionOne only says for which device a file was written; a file cut
 * short or damaged past its header is caught here rather than handed to the driver, whose
 * checks of the rest vary. */
static const char TRAILER_MAGIC[8] = {'v', 'k', 'b', 'e', 'r', 't', 'P', '1'};
#define TRAILER_SIZE 24

static bool fits(int written, size_t size)
{
    return written > 0 && (size_t)written < size;
}

bool vkb_cache_dir_resolve(const char *setting, char *out, size_t size)
{
    if (setting && *setting)
        return strcmp(setting, "off") != 0 && fits(snprintf(out, size, "%s", setting), size);
    char home[CACHE_PATH_MAX];
    return plat_cache_home(home, sizeof home) && fits(snprintf(out, size, "%s/vkbert", home), size);
}

bool vkb_cache_dir(const vkbert_context *ctx, char *out, size_t size)
{
    return ctx->env.cache_dir[0] && fits(snprintf(out, size, "%s", ctx->env.cache_dir), size);
}

bool vkb_cache_path(const vkbert_context *ctx, vkb_cache_kind kind, char *out, size_t size)
{
    char dir[CACHE_PATH_MAX], uuid[2 * VK_UUID_SIZE + 1];
    if (!vkb_cache_dir(ctx, dir, sizeof dir)) return false;
    const VkPhysicalDeviceProperties *p = &ctx->props;
    for (uint32_t i = 0; i < VK_UUID_SIZE; i++)
        snprintf(uuid + 2 * i, 3, "%02x", p->pipelineCacheUUID[i]);
    /* The tuning results also depend on the driver's version: a new compiler can move the
     * best tile. The pipeline data carries its own check of that in its UUID. */
    if (kind == VKB_CACHE_PIPELINES)
        return fits(
            snprintf(out, size, "%s/pipelines-%x-%x-%s.bin", dir, p->vendorID, p->deviceID, uuid),
            size);
    return fits(snprintf(out, size, "%s/tune-%x-%x-%x-%s.json", dir, p->vendorID, p->deviceID,
                         p->driverVersion, uuid),
                size);
}

void *vkb_cache_read(const char *path, size_t max, size_t *size)
{
    uint64_t length = 0;
    if (plat_file_info(path, &length) != PLAT_REGULAR || length == 0 || length > max) return NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *data = malloc((size_t)length + 1);
    /* A file that changed size since it was examined is being rewritten: not used. */
    bool whole = data && fread(data, 1, (size_t)length, f) == length && fgetc(f) == EOF;
    fclose(f);
    if (!whole) {
        free(data);
        return NULL;
    }
    data[length] = '\0'; /* so that a text file can be parsed in place */
    *size = (size_t)length;
    return data;
}

/* The directory part of `path` in `dir`; false when there is none (a bare file name). */
static bool parent_dir(const char *path, char *dir, size_t size)
{
    size_t end = 0;
    for (size_t i = 1; path[i]; i++)
        if (strchr(PLAT_SEPARATORS, path[i])) end = i;
    if (end == 0 || end >= size) return false;
    memcpy(dir, path, end);
    dir[end] = '\0';
    return true;
}

/* A temporary file in the same directory, then a rename: readers, and other processes saving
 * at the same time, see the old file or the new one, never a mix. No fsync: after a crash the
 * worst is a damaged file, which the next reader ignores. The directories are made private to
 * the user (the caches say what ran). */
int vkb_cache_write(const char *path, const void *data, size_t size)
{
    char dir[CACHE_PATH_MAX], temp[CACHE_PATH_MAX];
    if (!fits(snprintf(temp, sizeof temp, "%s.XXXXXX", path), sizeof temp)) return ENAMETOOLONG;
    int error = parent_dir(path, dir, sizeof dir) ? plat_mkdirs(dir) : 0;
    if (error) return error;
    FILE *f = plat_create_temp(temp); /* readable by the user only */
    if (!f) return errno ? errno : EIO;
    error = fwrite(data, 1, size, f) == size ? 0 : (errno ? errno : EIO);
    if (fclose(f) && !error) error = errno ? errno : EIO;
    if (!error) error = plat_replace(temp, path);
    if (error) remove(temp);
    return error;
}

/* ---- the pipeline cache ---- */

/* FNV-1a, 64 bits: enough to notice damage; nothing here defends against a forger. */
static uint64_t checksum(const uint8_t *data, size_t size)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

/* The header's fields are little-endian whatever the host (Vulkan spec, vkGetPipelineCacheData). */
static uint64_t read_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void write_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

static bool header_matches(const vkbert_context *ctx, const uint8_t *data, size_t size)
{
    if (size < 32) return false;
    uint64_t length = read_le(data, 4), version = read_le(data + 4, 4);
    return length >= 32 && length <= size && version == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
           read_le(data + 8, 4) == ctx->props.vendorID &&
           read_le(data + 12, 4) == ctx->props.deviceID &&
           !memcmp(data + 16, ctx->props.pipelineCacheUUID, VK_UUID_SIZE);
}

static bool trailer_matches(const uint8_t *data, size_t size)
{
    const uint8_t *t = data + size;
    return !memcmp(t, TRAILER_MAGIC, sizeof TRAILER_MAGIC) && read_le(t + 8, 8) == size &&
           read_le(t + 16, 8) == checksum(data, size);
}

/* The driver data of this device's cache file when it is whole and was written for this
 * device; NULL otherwise. */
static uint8_t *load_valid(const vkbert_context *ctx, size_t *size)
{
    char path[CACHE_PATH_MAX];
    size_t total = 0;
    if (!vkb_cache_path(ctx, VKB_CACHE_PIPELINES, path, sizeof path)) return NULL;
    uint8_t *data = vkb_cache_read(path, PIPELINE_CACHE_MAX, &total);
    if (!data) return NULL;
    *size = total >= TRAILER_SIZE ? total - TRAILER_SIZE : 0;
    if (total < TRAILER_SIZE || !trailer_matches(data, *size) ||
        !header_matches(ctx, data, *size)) {
        free(data);
        return NULL;
    }
    return data;
}

vkbert_status vkb_pipeline_cache_create(vkbert_context *ctx)
{
    size_t size = 0;
    uint8_t *data = load_valid(ctx, &size);
    VkPipelineCacheCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = data ? size : 0,
        .pInitialData = data,
    };
    VkResult result = vkCreatePipelineCache(ctx->device, &info, NULL, &ctx->pipeline_cache);
    if (result != VK_SUCCESS && data) { /* the driver refused the data after all: start empty */
        free(data);
        data = NULL;
        info.initialDataSize = 0, info.pInitialData = NULL;
        result = vkCreatePipelineCache(ctx->device, &info, NULL, &ctx->pipeline_cache);
    }
    ctx->pipeline_cache_loaded = data ? size : 0;
    ctx->pipeline_cache_checksum = data ? checksum(data, size) : 0;
    free(data);
    if (result != VK_SUCCESS) return vkb_fail_vk(ctx, result, "vkCreatePipelineCache");
    return VKBERT_OK;
}

void vkb_pipeline_cache_save(vkbert_context *ctx)
{
    char path[CACHE_PATH_MAX];
    size_t size = 0;
    if (!ctx->pipeline_cache || !ctx->pipeline_count ||
        !vkb_cache_path(ctx, VKB_CACHE_PIPELINES, path, sizeof path))
        return;
    VkResult result = vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, NULL);
    if (result != VK_SUCCESS || size > PIPELINE_CACHE_MAX) return;
    uint8_t *data = malloc(size + TRAILER_SIZE);
    if (!data) return;
    result = vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, data);
    /* Data that only repeats what was loaded is not written again. */
    bool unchanged =
        size == ctx->pipeline_cache_loaded && checksum(data, size) == ctx->pipeline_cache_checksum;
    if (result == VK_SUCCESS && !unchanged && header_matches(ctx, data, size)) {
        memcpy(data + size, TRAILER_MAGIC, sizeof TRAILER_MAGIC);
        write_le(data + size + 8, size, 8);
        write_le(data + size + 16, checksum(data, size), 8);
        vkb_cache_write(path, data, size + TRAILER_SIZE); /* a failure only costs the next start */
    }
    free(data);
}
