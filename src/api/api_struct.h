/* The growable structs of the public API (vkbert.h, "Structs that may grow"): every public
 * call copies a caller's struct into a full-size one of this library's before reading it, and
 * writes a struct it fills in no further than the caller's struct_size. */
#ifndef VKBERT_API_STRUCT_H
#define VKBERT_API_STRUCT_H

#include "vk/vk.h"

#include <stddef.h>

/* The size of `type` up to and including `member`: a struct's first published size is this
 * for its last member in the version that introduced it, which stays right when members are
 * appended later (sizeof would not). Trailing padding is not part of it. */
#define VKB_SIZE_THROUGH(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/* Copies the caller's `src` (its first field its struct_size) into `dst` of `dst_size` bytes:
 * min(struct_size, dst_size) bytes, the rest zeroed, and dst's struct_size set to dst_size.
 * A struct_size below `first_size` (0 included), or bytes beyond dst_size that are not 0, is
 * VKBERT_ERROR_INVALID_ARGUMENT naming `name` (the struct's type) and its _INIT macro; the
 * message goes to `ctx`, or to the thread's (vkbert_last_error(NULL)) when ctx is NULL. A NULL
 * `src` gives the defaults: dst zeroed, its struct_size set. */
vkbert_status vkb_struct_in(vkbert_context *ctx, const void *src, size_t first_size, void *dst,
                            size_t dst_size, const char *name);

/* Checks the struct_size of a struct the library fills in (the same rule as vkb_struct_in's) and
 * returns it in *size. */
vkbert_status vkb_struct_out_size(vkbert_context *ctx, const void *dst, size_t first_size,
                                  const char *name, uint32_t *size);
/* Writes the library's full `src` of `src_size` bytes to the caller's `dst` of `size` bytes
 * (from vkb_struct_out_size): at most `size` bytes, bytes past src_size zeroed (fields this
 * library does not know read as 0), the caller's struct_size kept. */
void vkb_struct_out(void *dst, uint32_t size, const void *src, size_t src_size);

#endif
