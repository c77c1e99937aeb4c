/* The growable-struct rule (api_struct.h): callers built against an older header pass smaller
 * structs, those built against a newer one larger structs whose new fields this library cannot
 * honour unless they are 0. */
#include "api/api_struct.h"

#include <ctype.h>
#include <string.h>

/* A bound on the bytes read past this library's struct, and written past it into a newer
 * caller's: an uninitialised struct_size (garbage) is refused before it is used. */
#define STRUCT_SIZE_MAX 65536u

/* The struct's _INIT macro is its type name in capitals: vkbert_mask -> VKBERT_MASK_INIT. */
static vkbert_status bad_size(vkbert_context *ctx, const char *name, uint32_t size, const char *why)
{
    char macro[64];
    size_t n = 0;
    for (; name[n] && n < sizeof macro - 1; n++)
        macro[n] = (char)toupper((unsigned char)name[n]);
    macro[n] = '\0';
#define BAD_SIZE "%s.struct_size is %u, %s: set it with %s_INIT" /* a literal, checked */
    return ctx ? vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, BAD_SIZE, name, size, why, macro)
               : vkb_fail_global(VKBERT_ERROR_INVALID_ARGUMENT, BAD_SIZE, name, size, why, macro);
#undef BAD_SIZE
}

static vkbert_status check_size(vkbert_context *ctx, const void *s, size_t first_size,
                                const char *name, uint32_t *size)
{
    memcpy(size, s, sizeof *size);
    if (*size == 0) return bad_size(ctx, name, *size, "so it was never set");
    if (*size < first_size) return bad_size(ctx, name, *size, "smaller than any version's");
    if (*size > STRUCT_SIZE_MAX)
        return bad_size(ctx, name, *size, "more than any struct of vkbert will need");
    return VKBERT_OK;
}

vkbert_status vkb_struct_in(vkbert_context *ctx, const void *src, size_t first_size, void *dst,
                            size_t dst_size, const char *name)
{
    memset(dst, 0, dst_size);
    uint32_t size = (uint32_t)dst_size;
    if (src) {
        vkbert_status status = check_size(ctx, src, first_size, name, &size);
        if (status) return status;
        const unsigned char *bytes = src;
        for (size_t i = dst_size; i < size; i++)
            if (bytes[i])
                return bad_size(ctx, name, size,
                                "from a newer vkbert whose fields this one does not know, and "
                                "they are not 0");
        memcpy(dst, src, size < dst_size ? size : dst_size);
    }
    size = (uint32_t)dst_size;
    memcpy(dst, &size, sizeof size);
    return VKBERT_OK;
}

vkbert_status vkb_struct_out_size(vkbert_context *ctx, const void *dst, size_t first_size,
                                  const char *name, uint32_t *size)
{
    return check_size(ctx, dst, first_size, name, size);
}

void vkb_struct_out(void *dst, uint32_t size, const void *src, size_t src_size)
{
    size_t n = size < src_size ? size : src_size;
    unsigned char *bytes = dst;
    memcpy(bytes + sizeof size, (const unsigned char *)src + sizeof size, n - sizeof size);
    if (size > src_size) memset(bytes + src_size, 0, size - src_size);
}
