/* Times the matmul op alone at one shape with the tiles of VKBERT_MATMUL_TILES (or the tuning
 * table's), median of GPU timestamps. A development tool: `vkbert bench` is the user's. */
#include "ops/ops.h"
#include "vk/tensor.h"
#include "tune/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    uint32_t m = argc > 1 ? atoi(argv[1]) : 1024, n = argc > 2 ? atoi(argv[2]) : 768;
    uint32_t k = argc > 3 ? atoi(argv[3]) : 768;
    int trans = argc > 4 ? atoi(argv[4]) : 0;
    /* "q8": B as Q8_0 blocks (shaders/q8_io.glsl), its size only: like the other operands, it
     * holds whatever the allocation held. */
    bool q8 = argc > 5 && !strcmp(argv[5], "q8");
    vkbert_context *ctx;
    vkbert_context_options opt = {.struct_size = sizeof(vkbert_context_options), .timestamps = 1};
    if (vkbert_context_create(&opt, &ctx))
        return fprintf(stderr, "%s\n", vkbert_last_error(NULL)), 1;
    uint32_t lda = vkb_pitch(k), ldb = trans ? vkb_pitch(k) : vkb_pitch(n), ldc = vkb_pitch(n);
    vkb_buffer a, b, bias, c;
    vkb_buffer_create(ctx, (uint64_t)m * lda * 4, &a);
    uint64_t b_bytes =
        q8 ? (uint64_t)ldb / 4 * ((k + 31) / 32) * 144 : (uint64_t)(trans ? n : k) * ldb * 4;
    vkb_buffer_create(ctx, b_bytes, &b);
    vkb_buffer_create(ctx, ldc * 4, &bias);
    vkb_buffer_create(ctx, (uint64_t)m * ldc * 4, &c);
    VkDescriptorPool pool;
    vkb_descriptor_pool(ctx, 4, &pool);
    vkb_matmul_desc d = {.m = m,
                         .n = n,
                         .k = k,
                         .batch = 1,
                         .lda = lda,
                         .ldb = ldb,
                         .ldc = ldc,
                         .b_trans = trans,
                         .b = q8 ? VKB_FORMAT_Q8_0 : VKB_FORMAT_F32};
    vkb_dispatch dispatch = {0};
    vkb_view bv = vkb_whole(&bias);
    if (vkb_op_matmul(ctx, pool, &d, vkb_whole(&a), vkb_whole(&b), &bv, vkb_whole(&c), &dispatch))
        return fprintf(stderr, "%s\n", vkbert_last_error(ctx)), 1;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                .queryCount = 2};
    VkQueryPool q;
    vkCreateQueryPool(ctx->device, &qi, NULL, &q);
    double times[15];
    for (int r = 0; r < 15; r++) {
        VkCommandBuffer cmd = ctx->transfer_cmd;
        VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        vkBeginCommandBuffer(cmd, &begin);
        vkCmdResetQueryPool(cmd, q, 0, 2);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, q, 0);
        vkb_cmd_dispatch(cmd, &dispatch);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, q, 1);
        vkEndCommandBuffer(cmd);
        vkb_submit_wait(ctx, cmd);
        uint64_t t[2];
        vkGetQueryPoolResults(ctx->device, q, 0, 2, sizeof t, t, 8,
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        times[r] = (t[1] - t[0]) * ctx->timestamp_ns * 1e-6;
    }
    qsort(times, 15, sizeof *times, cmp);
    vkb_matmul_tiles t = vkb_tune_matmul(ctx, m, n, k, 0, 0);
    printf(
        "%s%s M %u N %u K %u trans %d tiles wg %ux%u tm %u tn4 %u: median %.3f ms, %.1f GFLOP/s\n",
        vkb_family_name(t.family), q8 ? " q8" : "", m, n, k, trans, t.wg_x, t.wg_y, t.tm, t.tn4,
        times[7], 2.0 * m * n * k / (times[7] * 1e6));
    vkDestroyQueryPool(ctx->device, q, NULL);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &a), vkb_buffer_destroy(ctx, &b), vkb_buffer_destroy(ctx, &bias),
        vkb_buffer_destroy(ctx, &c);
    vkbert_context_destroy(ctx);
    return 0;
}
