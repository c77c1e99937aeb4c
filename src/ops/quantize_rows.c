/* Host side of shaders/quantize_rows.comp: int8 activations for the integer-dot matmul. */
#include "ops/ops.h"
#include "shader_variants.h"
#include "tune/tune.h"

typedef struct quantize_push {
    uint32_t m, k, lda4, pitch4;
} quantize_push;
_Static_assert(sizeof(quantize_push) == VKB_PUSH_BYTES_QUANTIZE_ROWS,
               "quantize_push matches shaders/quantize_rows.comp's Push block");

uint32_t vkb_q8_rows_pitch(uint32_t k)
{
    return 4 * (1 + 2 * ((k + 31) / 32));
}

vkbert_status vkb_op_quantize_rows(vkbert_context *ctx, VkDescriptorPool pool, uint32_t rows,
                                   uint32_t k, uint32_t lda, vkb_view a, vkb_view out,
                                   vkb_dispatch *dispatch)
{
    if (!rows || !k || lda % 4 || lda < k || k > UINT32_MAX - 64)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT, "quantize rows: bad shape");
    uint32_t pitch = vkb_q8_rows_pitch(k);
    if ((uint64_t)(rows - 1) * lda * 4 + (uint64_t)k * 4 > a.size ||
        (uint64_t)rows * pitch * 4 > out.size)
        return vkb_fail(ctx, VKBERT_ERROR_INVALID_ARGUMENT,
                        "quantize rows: %u rows of %u do not fit the buffers", rows, k);
    uint32_t size = vkb_tune_softmax_workgroup(ctx, k);
    const vkb_spirv *shader = vkb_tune_variant(ctx, &vkb_variants_quantize_rows, 0);
    quantize_push push = {rows, k, lda / 4, pitch / 4};
    /* Bindings 0 and 1 only: vkb_kernel's views are the shader's bindings in order. */
    vkb_view views[2] = {a, out};
    vkb_kernel kernel = {shader, NULL, &size, 1, views, 2, &push, sizeof push, 0};
    vkbert_status status = vkb_dispatch_prepare(ctx, pool, &kernel, dispatch);
    if (status) return status;
    vkb_grid_1d(ctx, rows, 1, dispatch->groups); /* one workgroup per row */
    return vkb_check_groups(ctx, dispatch);
}
