/* The tuning cache: what `vkbert tune` measured on this device, read at context creation and
 * consulted by the table (tune.c) before its built-in choices. The format is in tune.h.
 *
 * Nothing here may make a context fail: a file that is missing, unreadable, not JSON, of
 * another version or for another device is ignored whole, and an entry that is malformed or
 * does not fit the device's limits is ignored alone. Saving is stricter: the caller's results
 * must all be valid, so that `vkbert tune` never writes what the next start would throw away. */
#include "tune/tune.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUNE_VERSION 1
#define TUNE_MAX_ENTRIES 64
#define TUNE_FILE_MAX ((size_t)1 << 20)
#define TUNE_PATH_MAX 4096

typedef struct tuned_matmul {
    vkb_matmul_tiles tiles;
    uint64_t outputs; /* m * n * batch of the product it was measured on */
    uint32_t k;
} tuned_matmul;

typedef struct tuned_attention {
    vkb_family family; /* the fused kernel and the unfused path differ per family */
    uint64_t score_bytes;
    bool fused;
} tuned_attention;

struct vkb_tune_cache {
    tuned_matmul matmul[TUNE_MAX_ENTRIES];
    tuned_attention attention[TUNE_MAX_ENTRIES];
    uint32_t matmul_count, attention_count;
    int int8_dot; /* "int8_path": 1 "dot", 0 "dequant", -1 absent */
};

/* ---- reading entries ---- */

/* An integer member within [min, max]. */
static bool get_uint(const cJSON *object, const char *name, double min, double max, uint64_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (!cJSON_IsNumber(item)) return false;
    double v = item->valuedouble;
    if (!(v >= min && v <= max) || v != floor(v)) return false;
    *out = (uint64_t)v;
    return true;
}

/* The entry's "family": 0 simd, 1 gpu, -1 neither. */
static int family_of(const cJSON *entry)
{
    const char *family = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "family"));
    return !family ? -1 : !strcmp(family, "simd") ? 0 : !strcmp(family, "gpu") ? 1 : -1;
}

static vkb_family family_from(int index)
{
    return index == 0 ? VKB_FAMILY_SIMD : VKB_FAMILY_GPU;
}

/* NULL when the entry is valid for this device, else what is wrong with it. */
static const char *parse_matmul(const vkbert_context *ctx, const cJSON *entry, tuned_matmul *out)
{
    static const char *const names[] = {"m", "n", "k", "batch", "wg_x", "wg_y", "tm", "tn4", "bk"};
    /* Bounds that keep every product of them far from overflow; the limits do the rest. */
    static const double max[] = {1 << 20, 1 << 20, 1 << 20, 1 << 16, 1024, 1024, 64, 64, 256};
    uint64_t v[9];
    for (int i = 0; i < 9; i++)
        if (!get_uint(entry, names[i], i == 8 ? 0 : 1, max[i], &v[i]))
            return "lacks an integer member in range";
    int family = family_of(entry);
    if (family < 0) return "has no \"family\" of \"simd\" or \"gpu\"";
    vkb_matmul_tiles t = {
        family_from(family), (uint32_t)v[4], (uint32_t)v[5], (uint32_t)v[6], (uint32_t)v[7], 0, 0,
        (uint32_t)v[8]};
    if (!vkb_tune_tiles_fit(ctx, &t)) return "has tiles that this device cannot run";
    *out = (tuned_matmul){t, v[0] * v[1] * v[3], (uint32_t)v[2]};
    return NULL;
}

static bool parse_attention(const cJSON *entry, tuned_attention *out)
{
    const cJSON *fused = cJSON_GetObjectItemCaseSensitive(entry, "fused");
    int family = family_of(entry);
    if (!cJSON_IsBool(fused) || family < 0 ||
        !get_uint(entry, "score_bytes", 1, 0x1p53, &out->score_bytes))
        return false;
    out->family = family_from(family);
    out->fused = cJSON_IsTrue(fused);
    return true;
}

/* ---- the device a file is for ---- */

static void uuid_hex(const vkbert_context *ctx, char out[2 * VK_UUID_SIZE + 1])
{
    for (uint32_t i = 0; i < VK_UUID_SIZE; i++)
        snprintf(out + 2 * i, 3, "%02x", ctx->props.pipelineCacheUUID[i]);
}

static cJSON *device_object(const vkbert_context *ctx)
{
    char uuid[2 * VK_UUID_SIZE + 1];
    uuid_hex(ctx, uuid);
    cJSON *device = cJSON_CreateObject();
    if (device && cJSON_AddStringToObject(device, "name", ctx->info.name) &&
        cJSON_AddNumberToObject(device, "vendor_id", ctx->props.vendorID) &&
        cJSON_AddNumberToObject(device, "device_id", ctx->props.deviceID) &&
        cJSON_AddNumberToObject(device, "driver_version", ctx->props.driverVersion) &&
        cJSON_AddStringToObject(device, "uuid", uuid))
        return device;
    cJSON_Delete(device);
    return NULL;
}

/* The file name says the same, but a file can be copied or renamed. */
static bool for_this_device(const vkbert_context *ctx, const cJSON *doc)
{
    const cJSON *device = cJSON_GetObjectItemCaseSensitive(doc, "device");
    char uuid[2 * VK_UUID_SIZE + 1];
    uuid_hex(ctx, uuid);
    uint64_t version, vendor, id, driver;
    const char *file_uuid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(device, "uuid"));
    return get_uint(doc, "vkbert_tune", TUNE_VERSION, TUNE_VERSION, &version) &&
           get_uint(device, "vendor_id", 0, UINT32_MAX, &vendor) &&
           get_uint(device, "device_id", 0, UINT32_MAX, &id) &&
           get_uint(device, "driver_version", 0, UINT32_MAX, &driver) &&
           vendor == ctx->props.vendorID && id == ctx->props.deviceID &&
           driver == ctx->props.driverVersion && file_uuid && !strcmp(file_uuid, uuid);
}

/* ---- the whole document ---- */

/* The entries of "matmul"; strict (saving): a bad one is an error, described in `why`;
 * otherwise (loading) it is skipped. */
static bool parse_matmuls(const vkbert_context *ctx, const cJSON *array, bool strict,
                          vkb_tune_cache *cache, char *why, size_t why_size)
{
    int index = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, array)
    {
        const char *bad = cache->matmul_count == TUNE_MAX_ENTRIES
                              ? "is one too many"
                              : parse_matmul(ctx, entry, &cache->matmul[cache->matmul_count]);
        if (!bad)
            cache->matmul_count++;
        else if (strict) {
            snprintf(why, why_size, "matmul entry %d %s", index, bad);
            return false;
        }
        index++;
    }
    return true;
}

static bool parse_attentions(const cJSON *array, bool strict, vkb_tune_cache *cache, char *why,
                             size_t why_size)
{
    int index = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, array)
    {
        bool bad = cache->attention_count == TUNE_MAX_ENTRIES ||
                   !parse_attention(entry, &cache->attention[cache->attention_count]);
        if (!bad)
            cache->attention_count++;
        else if (strict) {
            snprintf(why, why_size,
                     "attention entry %d lacks \"family\", \"score_bytes\" or \"fused\", "
                     "or is one too many",
                     index);
            return false;
        }
        index++;
    }
    return true;
}

/* "int8_path": 1 "dot", 0 "dequant", -1 absent, -2 anything else. */
static int int8_path_of(const cJSON *doc)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(doc, "int8_path");
    const char *path = cJSON_GetStringValue(item);
    if (!item) return -1;
    return !path ? -2 : !strcmp(path, "dot") ? 1 : !strcmp(path, "dequant") ? 0 : -2;
}

/* Fills `cache` from a document for this device. */
static bool parse_doc(const vkbert_context *ctx, const cJSON *doc, bool strict,
                      vkb_tune_cache *cache, char *why, size_t why_size)
{
    cache->int8_dot = int8_path_of(doc);
    if (cache->int8_dot == -2 && strict) {
        snprintf(why, why_size, "\"int8_path\" must be \"dot\" or \"dequant\"");
        return false;
    }
    if (cache->int8_dot == 1 && !ctx->int8_dot) cache->int8_dot = -2;
    if (cache->int8_dot == -2) cache->int8_dot = -1; /* ignored: this device cannot run it */
    const cJSON *matmul = cJSON_GetObjectItemCaseSensitive(doc, "matmul");
    const cJSON *attention = cJSON_GetObjectItemCaseSensitive(doc, "attention");
    if (strict &&
        ((matmul && !cJSON_IsArray(matmul)) || (attention && !cJSON_IsArray(attention)))) {
        snprintf(why, why_size, "\"matmul\" and \"attention\" must be arrays");
        return false;
    }
    return parse_matmuls(ctx, cJSON_IsArray(matmul) ? matmul : NULL, strict, cache, why,
                         why_size) &&
           parse_attentions(cJSON_IsArray(attention) ? attention : NULL, strict, cache, why,
                            why_size);
}

void vkb_tune_cache_free(vkbert_context *ctx)
{
    free(ctx->tune);
    ctx->tune = NULL;
}

void vkb_tune_cache_load(vkbert_context *ctx)
{
    char path[TUNE_PATH_MAX];
    size_t size = 0;
    vkb_tune_cache_free(ctx);
    if (!vkb_cache_path(ctx, VKB_CACHE_TUNE, path, sizeof path)) return;
    char *text = vkb_cache_read(path, TUNE_FILE_MAX, &size);
    cJSON *doc = text ? cJSON_ParseWithLength(text, size) : NULL;
    vkb_tune_cache *cache = doc ? calloc(1, sizeof *cache) : NULL;
    char why[8];
    if (cache && for_this_device(ctx, doc) && parse_doc(ctx, doc, false, cache, why, sizeof why) &&
        (cache->matmul_count || cache->attention_count || cache->int8_dot >= 0))
        ctx->tune = cache;
    else
        free(cache);
    cJSON_Delete(doc);
    free(text);
}

/* ---- lookups ---- */

static double log2_ratio(double a, double b)
{
    return fabs(log2(a / b));
}

/* A tile tuned for a big product starves a much smaller one of workgroups, and one tuned for
 * a deep k says little about a shallow one (the per-head products of attention): an entry
 * speaks for products with at least half its outputs and a depth within 4x of its own. */
bool vkb_tune_cache_matmul(const vkbert_context *ctx, vkb_family family, uint32_t m, uint32_t n,
                           uint32_t k, uint32_t batch, vkb_matmul_tiles *out)
{
    const vkb_tune_cache *cache = ctx->tune;
    double outputs = (double)m * n * batch, best = INFINITY;
    for (uint32_t i = 0; cache && i < cache->matmul_count; i++) {
        const tuned_matmul *e = &cache->matmul[i];
        vkb_matmul_tiles t = e->tiles;
        if (t.family != family || 2 * outputs < (double)e->outputs || log2_ratio(k, e->k) > 2.0 ||
            !vkb_tune_tiles_fit(ctx, &t))
            continue; /* limits are checked again: a caller may have lowered them */
        double distance = log2_ratio(outputs, (double)e->outputs) + log2_ratio(k, e->k);
        if (distance < best) best = distance, *out = t;
    }
    return best < INFINITY;
}

int vkb_tune_cache_int8_dot(const vkbert_context *ctx)
{
    return ctx->tune ? ctx->tune->int8_dot : -1;
}

int vkb_tune_cache_fused(const vkbert_context *ctx, uint64_t score_bytes)
{
    const vkb_tune_cache *cache = ctx->tune;
    vkb_family family = vkb_tune_family(ctx);
    double best = 2.0; /* 4x either way at most: beyond that the crossover is unknown */
    int fused = -1;
    for (uint32_t i = 0; cache && score_bytes && i < cache->attention_count; i++) {
        const tuned_attention *e = &cache->attention[i];
        double distance = log2_ratio((double)score_bytes, (double)e->score_bytes);
        if (e->family == family && distance <= best) best = distance, fused = e->fused;
    }
    return fused;
}

/* ---- saving ---- */

/* The caller's members, after the version and the device, which are the library's to say. */
static cJSON *stamped(const vkbert_context *ctx, cJSON *results)
{
    cJSON *doc = cJSON_CreateObject(), *device = device_object(ctx);
    if (!doc || !device || !cJSON_AddNumberToObject(doc, "vkbert_tune", TUNE_VERSION)) {
        cJSON_Delete(doc);
        cJSON_Delete(device);
        return NULL;
    }
    cJSON_AddItemToObject(doc, "device", device);
    cJSON_DeleteItemFromObjectCaseSensitive(results, "vkbert_tune");
    cJSON_DeleteItemFromObjectCaseSensitive(results, "device");
    while (results->child) {
        cJSON *item = cJSON_DetachItemViaPointer(results, results->child);
        cJSON_AddItemToObject(doc, item->string, item);
    }
    return doc;
}

/* Whether a matmul or attention entry would be loaded on this device. */
static bool valid_entry(const vkbert_context *ctx, const cJSON *entry, bool matmul)
{
    tuned_matmul m;
    tuned_attention a;
    return matmul ? !parse_matmul(ctx, entry, &m) : parse_attention(entry, &a);
}

static cJSON *array_in(const cJSON *object, const char *name)
{
    cJSON *array = cJSON_GetObjectItemCaseSensitive(object, name);
    return cJSON_IsArray(array) ? array : NULL;
}

/* `vkbert tune` measures one family (VKBERT_KERNELS can force the other): the valid entries
 * of the file for a family the new results do not mention are kept, and its "int8_path" when
 * the results have none. */
static void keep_other_families(const vkbert_context *ctx, const char *file, cJSON *doc)
{
    static const char *const arrays[] = {"matmul", "attention"};
    bool mentioned[2] = {false, false};
    const cJSON *entry;
    for (int a = 0; a < 2; a++)
        cJSON_ArrayForEach(entry, array_in(doc, arrays[a]))
        {
            int family = family_of(entry);
            if (family >= 0) mentioned[family] = true;
        }
    size_t size = 0;
    char *text = vkb_cache_read(file, TUNE_FILE_MAX, &size);
    cJSON *old = text ? cJSON_ParseWithLength(text, size) : NULL;
    free(text);
    bool usable = old && for_this_device(ctx, old);
    for (int a = 0; a < 2 && usable; a++) {
        cJSON *to = cJSON_GetObjectItemCaseSensitive(doc, arrays[a]);
        if (!to) to = cJSON_AddArrayToObject(doc, arrays[a]);
        if (!cJSON_IsArray(to)) continue; /* the check of the results will say so */
        cJSON_ArrayForEach(entry, array_in(old, arrays[a]))
        {
            int family = family_of(entry);
            if (family >= 0 && !mentioned[family] && valid_entry(ctx, entry, a == 0))
                cJSON_AddItemToArray(to, cJSON_Duplicate(entry, true));
        }
    }
    if (usable && int8_path_of(doc) == -1 && int8_path_of(old) >= 0)
        cJSON_AddItemToObject(doc, "int8_path",
                              cJSON_Duplicate(cJSON_GetObjectItem(old, "int8_path"), true));
    cJSON_Delete(old);
}

static vkbert_status write_doc(vkbert_context *ctx, const cJSON *doc, const char *file)
{
    char *text = cJSON_Print(doc);
    if (!text) return vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    int error = vkb_cache_write(file, text, strlen(text));
    cJSON_free(text);
    if (error)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "cannot write %s: %s", file,
                        strerror(error));
    return VKBERT_OK;
}

vkbert_status vkb_tune_cache_save(vkbert_context *ctx, const char *json, char *path,
                                  size_t path_size)
{
    char file[TUNE_PATH_MAX], why[160];
    if (!vkb_cache_path(ctx, VKB_CACHE_TUNE, file, sizeof file))
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the cache is off (VKBERT_CACHE_DIR=off, or no HOME): nowhere to store "
                        "tuning results");
    cJSON *results = cJSON_Parse(json);
    if (!cJSON_IsObject(results)) {
        cJSON_Delete(results);
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "the tuning results are not a JSON object");
    }
    cJSON *doc = stamped(ctx, results);
    cJSON_Delete(results);
    if (doc) keep_other_families(ctx, file, doc);
    vkb_tune_cache *cache = doc ? calloc(1, sizeof *cache) : NULL;
    vkbert_status status = VKBERT_OK;
    if (!cache)
        status = vkb_fail(ctx, VKBERT_ERROR_OUT_OF_MEMORY, "out of host memory");
    else if (!parse_doc(ctx, doc, true, cache, why, sizeof why))
        status = vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "tuning results: %s", why);
    if (!status) status = write_doc(ctx, doc, file);
    cJSON_Delete(doc);
    if (status) {
        free(cache);
        return status;
    }
    vkb_tune_cache_free(ctx);
    ctx->tune = cache;
    if (path && path_size) snprintf(path, path_size, "%s", file);
    return VKBERT_OK;
}
