/* shaders/attention_fused.comp alone: Q, K, V rows with heads at pitch Dp, against a double
 * softmax(Q K^T) V with every mask form, causal, fully masked rows and dropout. */
#include "support.h"
#include "tune.h"

#include <stdlib.h>
#include <string.h>

typedef struct fused_case {
    uint32_t batch, heads, seq, dim;
    uint32_t mask_dims[4]; /* 0s: no mask */
    bool causal;
    float dropout;
    double masked_share;
    uint64_t seed;
} fused_case;

/* HuggingFace's additive mask semantics for the cases run while set. half: rows and output
 * stored as fp16 (VKBERT_PRECISION_FP16's activations). */
static bool additive, half;
/* What the latest check ran: its shader's name and its pipeline (alive with the context). */
static const char *last_kernel;
static const vkb_pipeline *last_pipeline;

static uint32_t pad4(uint32_t x)
{
    return (x + 3) / 4 * 4;
}

/* want[b*S+i][h*dp+t] = sum_j P[b,h,i,j] V[b*S+j][h*dp+t], P from the reference softmax. */
static void reference(fused_case c, const float *rows, uint32_t ld, uint64_t block,
                      const ref_mask *mask, double *want)
{
    uint32_t s = c.seq, dp = pad4(c.dim);
    size_t nbh = (size_t)c.batch * c.heads;
    double *scores = malloc(nbh * s * s * 8), *p = malloc(nbh * s * s * 8);
    for (size_t bh = 0; bh < nbh; bh++)
        for (uint32_t i = 0; i < s; i++)
            for (uint32_t j = 0; j < s; j++) {
                size_t b = bh / c.heads, h = bh % c.heads;
                double acc = 0;
                for (uint32_t t = 0; t < c.dim; t++)
                    acc += (double)rows[(b * s + i) * ld + h * dp + t] *
                           rows[block + (b * s + j) * ld + h * dp + t];
                scores[(bh * s + i) * s + j] = acc;
            }
    ref_options opt = {c.causal, c.dropout, c.seed, additive};
    ref_softmax(scores, (int)c.batch, (int)c.heads, (int)s, 1.0, mask, &opt, p);
    for (size_t bh = 0; bh < nbh; bh++)
        for (uint32_t i = 0; i < s; i++)
            for (uint32_t t = 0; t < dp; t++) {
                size_t b = bh / c.heads, h = bh % c.heads;
                double acc = 0;
                for (uint32_t j = 0; j < s && t < c.dim; j++)
                    acc +=
                        p[(bh * s + i) * s + j] * rows[2 * block + (b * s + j) * ld + h * dp + t];
                want[(b * s + i) * (c.heads * dp) + h * dp + t] = acc;
            }
    free(scores), free(p);
}

static void check(vkbert_context *ctx, fused_case c)
{
    uint32_t s = c.seq, dp = pad4(c.dim), width = c.heads * dp, ld = width + 4;
    uint64_t block = (uint64_t)c.batch * s * ld + 4; /* Q, K, V blocks at offsets */
    size_t n_rows = 3 * block + VKB_FUSED_SLACK, n_out = (size_t)c.batch * s * width;
    float *rows = malloc(n_rows * 4), *out = test_poisoned(n_out);
    ref_rng rng = {c.seed * 31 + s};
    ref_fill(&rng, rows, n_rows, -1.5, 1.5);
    for (size_t r = 0; r < n_rows; r++) /* heads' padding is zero in the layer's layout */
        if (r % block < (uint64_t)c.batch * s * ld && (r % block) % ld % dp >= c.dim) rows[r] = 0;

    bool has_mask = c.mask_dims[0] != 0;
    uint32_t *md = c.mask_dims, mp = has_mask ? pad4(md[3]) : 4, stride[4] = {0};
    size_t mask_n = has_mask ? (size_t)md[0] * md[1] * md[2] * mp : 4;
    float *mask = malloc(mask_n * 4);
    for (size_t i = 0; i < mask_n; i++)
        mask[i] = ref_uniform(&rng, 0, 1) < c.masked_share ? 0 : 1;
    uint32_t dense[4] = {md[1] * md[2] * mp, md[2] * mp, mp, 1};
    for (int i = 0; i < 4 && has_mask; i++)
        stride[i] = md[i] == 1 ? 0 : dense[i];

    vkb_buffer br = half ? test_half_buffer(ctx, rows, n_rows) : test_buffer(ctx, rows, n_rows);
    vkb_buffer bm = test_buffer(ctx, mask, mask_n);
    vkb_buffer bo = half ? test_half_buffer(ctx, out, n_out) : test_buffer(ctx, out, n_out);
    VkDescriptorPool pool = test_pool(ctx);
    vkb_fused_desc d = {c.batch,   c.heads, s,         c.dim,    ld,       width,
                        0,         block,   2 * block, has_mask, c.causal, {0},
                        c.dropout, c.seed,  additive,  half,     half};
    memcpy(d.mask_stride, stride, sizeof stride);
    vkb_dispatch dispatch = {0};
    TEST_OK(vkb_op_attention_fused(ctx, pool, &d, vkb_whole(&br), vkb_whole(&bm), vkb_whole(&bo),
                                   &dispatch));
    last_kernel = dispatch.name, last_pipeline = dispatch.pipeline;
    test_run(ctx, &dispatch, 1);
    if (half)
        test_half_buffer_read(ctx, &bo, out, n_out);
    else
        test_buffer_read(ctx, &bo, out, n_out);

    double *want = malloc(n_out * 8);
    ref_mask rm = {has_mask ? mask : NULL, {stride[0], stride[1], stride[2], stride[3]}};
    reference(c, rows, ld, block, &rm, want);
    char what[128];
    snprintf(what, sizeof what, "fused B %u H %u S %u D %u mask %d causal %d p %.2f", c.batch,
             c.heads, s, c.dim, has_mask, c.causal, (double)c.dropout);
    for (size_t i = 0; i < n_out; i++)
        if (i % dp >= c.dim) cr_assert_eq(out[i], 0.0f, "%s: padding %zu not zero", what, i);
    /* fp16 O: one rounding of each output (the inputs are the rounded values). */
    test_assert_close(out, want, n_out, half ? 1e-3 : 1e-5, what);
    vkDestroyDescriptorPool(ctx->device, pool, NULL);
    vkb_buffer_destroy(ctx, &br), vkb_buffer_destroy(ctx, &bm), vkb_buffer_destroy(ctx, &bo);
    free(rows), free(out), free(mask), free(want);
}

Test(attention_fused, sizes_and_head_dims)
{
    vkbert_context *ctx = test_context(0);
    /* Heads past 64 run in column slices (shaders/attention_fused.comp): 80 in two of 20, 100
     * in two of 52 whose last reaches past the head, 256 in four. */
    uint32_t seqs[] = {1, 7, 64, 129}, dims[] = {16, 17, 64, 80, 100, 128, 256};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 7; k++)
            check(ctx, (fused_case){1 + i % 2, 2, seqs[i], dims[k], {0}, false, 0, 0, 10 * i + k});
    test_context_done(ctx);
}

Test(attention_fused, masks_causal_and_fully_masked_rows)
{
    vkbert_context *ctx = test_context(0);
    uint32_t b = 2, h = 3, s = 23;
    uint32_t forms[][4] = {{b, 1, 1, s}, {b, 1, s, s}, {b, h, s, s}, {1, 1, s, s}, {1, h, 1, s}};
    for (int i = 0; i < 5; i++) {
        fused_case c = {b, h, s, 32, {0}, i % 2 == 1, 0, 0.5, 100 + i};
        memcpy(c.mask_dims, forms[i], sizeof forms[i]);
        check(ctx, c);
    }
    check(ctx, (fused_case){2, 2, 6, 16, {2, 1, 6, 6}, false, 0, 0.9, 7}); /* many empty rows */
    check(ctx, (fused_case){1, 1, 300, 64, {0}, true, 0, 0, 8});
    test_context_done(ctx);
}

Test(attention_fused, additive_mask)
{
    vkbert_context *ctx = test_context(0);
    additive = true;
    check(ctx, (fused_case){2, 2, 6, 16, {2, 1, 6, 6}, false, 0, 0.9, 7}); /* many empty rows */
    check(ctx, (fused_case){2, 3, 23, 32, {2, 1, 1, 23}, false, 0, 0.5, 8});
    check(ctx, (fused_case){1, 2, 33, 16, {1, 1, 33, 33}, true, 0.5f, 0.3, 9});
    test_context_done(ctx);
}

Test(attention_fused, fp16_rows_and_output)
{
    vkbert_context *ctx = test_context(0);
    half = true;
    check(ctx, (fused_case){2, 3, 23, 32, {2, 1, 1, 23}, false, 0, 0.5, 51});
    check(ctx, (fused_case){1, 2, 70, 17, {0}, true, 0, 0, 52});
    check(ctx, (fused_case){2, 2, 6, 64, {2, 1, 6, 6}, false, 0.3f, 0.9, 53});
    additive = true;
    check(ctx, (fused_case){2, 2, 9, 80, {2, 1, 1, 9}, false, 0, 0.5, 54});
    test_context_done(ctx);
}

Test(attention_fused, dropout_matches_reference)
{
    vkbert_context *ctx = test_context(0);
    check(ctx, (fused_case){2, 2, 40, 32, {0}, false, 0.2f, 0, 11});
    check(ctx, (fused_case){1, 2, 33, 16, {1, 1, 33, 33}, true, 0.5f, 0.3, 12});
    check(ctx, (fused_case){1, 1, 9, 16, {0}, false, 1.0f, 0, 13});
    test_context_done(ctx);
}

/* ---- K and V rows shared by shuffles (issue 10) ---- */

/* Whether Vulkan lets a pipeline require subgroups of `size` lanes here:
 * VkPipelineShaderStageRequiredSubgroupSizeCreateInfo's valid usage, with full subgroups. */
static bool can_require(const vkbert_context *ctx, uint32_t size)
{
    const VkPhysicalDeviceSubgroupSizeControlProperties *c = &ctx->subgroup_control;
    return ctx->subgroup_size_control && ctx->full_subgroups &&
           (c->requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
           c->minSubgroupSize <= size && size <= c->maxSubgroupSize;
}

/* The sharing kernel runs where its workgroup is one subgroup: at the device's own size (with
 * REQUIRE_FULL_SUBGROUPS_BIT where computeFullSubgroups is there, with nothing without it), or
 * at a size the pipeline requires; elsewhere the kernel that shares nothing. */
static void check_sharing(vkbert_context *ctx, const char *how)
{
    fused_case c = {2, 3, 23, 32, {2, 1, 1, 23}, false, 0, 0.5, 71};
    uint32_t size = vkb_tune_fused_workgroup(ctx, c.seq);
    bool native = size == ctx->subgroup.subgroupSize, required = !native && can_require(ctx, size);
    check(ctx, c);
    check(ctx, (fused_case){1, 2, 70, 100, {0}, true, 0, 0, 72}); /* two slices */
    cr_assert_eq(strstr(last_kernel, "shared") != NULL, native || required, "%s: %s ran", how,
                 last_kernel);
    VkPipelineShaderStageCreateFlags full =
        VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    if (native) {
        cr_assert_eq(last_pipeline->stage_flags, ctx->full_subgroups ? full : 0, "%s", how);
        cr_assert_eq(last_pipeline->required_subgroup_size, 0, "%s", how);
    } else if (required) {
        cr_assert_eq(last_pipeline->stage_flags, full, "%s", how);
        cr_assert_eq(last_pipeline->required_subgroup_size, size, "%s", how);
    }
}

Test(attention_fused, shared_rows_in_full_subgroups)
{
    vkbert_context *ctx = test_context_sharing(NULL);
    check_sharing(ctx, "as the device is");
    test_context_done(ctx);

    ctx = test_context_sharing("subgroup_size_control=0");
    cr_assert(!ctx->full_subgroups && !ctx->subgroup_size_control);
    check_sharing(ctx, "subgroup_size_control=0");
    test_context_done(ctx);

    /* As on a device whose subgroups default to twice the workgroup. */
    ctx = test_context_sharing(NULL);
    ctx->subgroup.subgroupSize = 2 * vkb_tune_fused_workgroup(ctx, 23);
    check_sharing(ctx, "a default of twice the workgroup");
    test_context_done(ctx);
}
