/* The encoder on packed (ragged) batches: each sequence's pooled embeddings and classifier
 * logits against the padded path's (relative L2 <= 1e-5, docs/ragged.md) and against the double
 * BertModel reference run on that sequence alone; plans reused across calls of nearby sizes. */
#include "io/bert_model.h"
#include "nn/encoder/encoder.h"
#include "reference_bert.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SEQ 8
#define LABELS 3
#define MODES (VKB_POOL_CLS | VKB_POOL_MAX | VKB_POOL_MEAN)

typedef struct fixture {
    vkbert_context *ctx;
    bert_config c;
    bert_weights w;
    vkbert_encoder *e;
} fixture;

/* D 5 (odd), an intermediate size no tile divides. */
static void setup(fixture *f)
{
    f->ctx = test_context(0);
    f->c = tiny_bert_config(20, 2, 4, 36, 64, 50);
    f->c.num_labels = LABELS;
    cr_assert_eq(bert_weights_random(&f->c, 13, &f->w), 0);
    vkbert_status loaded = vkb_encoder_new(f->ctx, &f->c, &f->w, VKBERT_PRECISION_FP32, &f->e);
    TEST_OK(loaded);
    encoder_head_spec head = {.pool_modes = MODES,
                              .labels = LABELS,
                              .classifier_w = f->w.classifier_w,
                              .classifier_b = f->w.classifier_b};
    TEST_OK(vkb_encoder_set_head(f->e, &head));
}

static void teardown(fixture *f)
{
    vkbert_encoder_destroy(f->e);
    bert_weights_free(&f->w);
    test_context_done(f->ctx);
}

/* With the context's message, which TEST_OK leaves out. */
#define EXPECT_OK(f, call)                                                                         \
    do {                                                                                           \
        vkbert_status status_ = (call);                                                            \
        cr_assert_eq(status_, VKBERT_OK, "%s: %s", #call, vkbert_last_error((f)->ctx));            \
    } while (0)

/* A batch of `n` sequences: packed ids and types with their offsets, and the same right-padded
 * to the longest with a mask. */
typedef struct batch {
    int n, longest;
    int32_t offsets[MAX_SEQ + 1];
    int prompts[MAX_SEQ];
    int32_t *ids, *types;                    /* packed [T] */
    int32_t *pad_ids, *pad_types, *pad_mask; /* [n][longest] */
} batch;

static void make_batch(const fixture *f, const int *lengths, const int *prompts, int n,
                       uint64_t seed, batch *b)
{
    ref_rng rng = {seed};
    memset(b, 0, sizeof *b);
    b->n = n;
    for (int i = 0; i < n; i++) {
        b->offsets[i + 1] = b->offsets[i] + lengths[i];
        b->longest = lengths[i] > b->longest ? lengths[i] : b->longest;
        b->prompts[i] = prompts ? prompts[i] : 0;
    }
    size_t t = (size_t)b->offsets[n], cells = (size_t)n * b->longest;
    b->ids = malloc(t * 4), b->types = malloc(t * 4);
    b->pad_ids = calloc(cells, 4), b->pad_types = calloc(cells, 4), b->pad_mask = calloc(cells, 4);
    for (size_t i = 0; i < t; i++) {
        b->ids[i] = (int32_t)ref_uniform(&rng, 0, f->c.vocab_size);
        b->types[i] = (int32_t)ref_uniform(&rng, 0, 2);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < lengths[i]; j++) {
            size_t at = (size_t)i * b->longest + j;
            b->pad_ids[at] = b->ids[b->offsets[i] + j];
            b->pad_types[at] = b->types[b->offsets[i] + j];
            b->pad_mask[at] = 1;
        }
}

static void free_batch(batch *b)
{
    free(b->ids), free(b->types), free(b->pad_ids), free(b->pad_types), free(b->pad_mask);
}

static encoder_batch packed_input(const batch *b)
{
    return (encoder_batch){b->n, b->longest, b->ids, b->types, NULL, b->prompts, b->offsets};
}

static encoder_batch padded_input(const batch *b)
{
    return (encoder_batch){b->n,        b->longest, b->pad_ids, b->pad_types,
                           b->pad_mask, b->prompts, NULL};
}

/* The padded path itself: vkb_encoder_run_call runs a call as given, never packed. */
static void run_padded(fixture *f, const batch *b, output_kind kind, float *out)
{
    encoder_call c = {.in = padded_input(b), .kind = kind, .out = out};
    EXPECT_OK(f, vkb_encoder_run_call(f->e, &c));
}

/* sentence-transformers' Pooling over one sequence's reference hidden states [len][H], the
 * first `prompt` tokens left out (include_prompt = false): cls is the first row after them. */
static void ref_pool(const double *hidden, int len, int prompt, int h, double *out)
{
    for (int j = 0; j < h; j++) {
        double most = -1e9, sum = 0;
        for (int s = prompt; s < len; s++) {
            double v = hidden[(size_t)s * h + j];
            most = v > most ? v : most;
            sum += v;
        }
        out[j] = hidden[(size_t)(prompt < len ? prompt : 0) * h + j];
        out[h + j] = most, out[2 * h + j] = sum / (len - prompt);
    }
}

/* Each sequence alone through the reference: its pooled embedding and its logits. */
static void reference(const fixture *f, const batch *b, double *pooled, double *logits)
{
    int h = f->c.hidden_size;
    double *hidden = malloc((size_t)b->longest * h * 8), *cls = malloc((size_t)h * 8);
    for (int i = 0; i < b->n; i++) {
        int len = b->offsets[i + 1] - b->offsets[i];
        ref_bert(&f->c, &f->w, 1, len, b->ids + b->offsets[i], b->types + b->offsets[i], NULL,
                 hidden, cls);
        ref_pool(hidden, len, b->prompts[i], h, pooled + (size_t)i * 3 * h);
        for (int l = 0; l < LABELS; l++) {
            double z = f->w.classifier_b[l];
            for (int j = 0; j < h; j++)
                z += (double)f->w.classifier_w[l * h + j] * cls[j];
            logits[i * LABELS + l] = z;
        }
    }
    free(hidden), free(cls);
}

static double relative_l2(const float *got, const float *want, size_t n)
{
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        err += d * d, norm += (double)want[i] * want[i];
    }
    return norm > 0 ? sqrt(err / norm) : sqrt(err);
}

/* Per sequence: packed vs padded within 1e-5, packed vs the reference within 1e-4. */
static void expect_rows(const float *packed, const float *padded, const double *want, int n,
                        size_t width, const char *what)
{
    for (int i = 0; i < n; i++) {
        const float *row = packed + (size_t)i * width;
        double vs_padded = relative_l2(row, padded + (size_t)i * width, width);
        ref_error e = ref_compare(row, want + (size_t)i * width, width);
        cr_assert(vs_padded <= 1e-5, "%s of sequence %d: relative L2 %.3g against the padded", what,
                  i, vs_padded);
        cr_assert(e.relative_l2 <= 1e-4,
                  "%s of sequence %d: relative L2 %.3g against the reference", what, i,
                  e.relative_l2);
    }
}

/* One batch three ways: packed as given, padded (run packed inside, as right padding allows)
 * and the padded path itself; both outputs, checked per sequence. */
static void check_batch(fixture *f, const int *lengths, const int *prompts, int n, uint64_t seed)
{
    batch b;
    make_batch(f, lengths, prompts, n, seed, &b);
    size_t width = 3 * (size_t)f->c.hidden_size;
    float *packed = test_poisoned(n * width), *inside = test_poisoned(n * width);
    float *padded = test_poisoned(n * width), *logits = test_poisoned(n * LABELS);
    float *padded_logits = test_poisoned(n * LABELS);
    double *want = malloc(n * width * 8), *want_logits = malloc(n * LABELS * 8);
    reference(f, &b, want, want_logits);

    encoder_batch in = packed_input(&b), pad = padded_input(&b);
    EXPECT_OK(f, vkb_encoder_sentences(f->e, &in, 0, packed));
    cr_assert(f->e->plan->ragged, "a packed batch runs on a ragged plan");
    EXPECT_OK(f, vkb_encoder_sentences(f->e, &pad, 0, inside));
    cr_assert(f->e->plan->ragged, "a right-padded batch runs packed inside");
    run_padded(f, &b, OUT_SENTENCES, padded);
    expect_rows(packed, padded, want, n, width, "embedding");
    expect_rows(inside, padded, want, n, width, "embedding (padded API)");

    EXPECT_OK(f, vkb_encoder_logits(f->e, &in, logits));
    run_padded(f, &b, OUT_LOGITS, padded_logits);
    expect_rows(logits, padded_logits, want_logits, n, LABELS, "logits");

    free(packed), free(inside), free(padded), free(logits), free(padded_logits);
    free(want), free(want_logits);
    free_batch(&b);
}

Test(encoder_ragged, random_lengths_equal_padded_and_reference)
{
    fixture f;
    setup(&f);
    /* 1 and 2 tokens, lengths no tile divides; 7 sequences (a spare one in the cap of 8) and
     * 61 tokens (3 spare rows in the cap of 64); prompts left out of pooling. */
    const int lengths[] = {1, 2, 7, 13, 5, 30, 3}, prompts[] = {0, 0, 2, 5, 0, 1, 0};
    check_batch(&f, lengths, prompts, 7, 3);
    const int one[] = {1};
    check_batch(&f, one, NULL, 1, 4);
    const int long_ones[] = {64, 17, 63};
    check_batch(&f, long_ones, NULL, 3, 5);
    teardown(&f);
}

Test(encoder_ragged, plan_reused_across_lengths)
{
    fixture f;
    setup(&f);
    const int first[] = {1, 2, 7, 13, 5, 30, 3}, same_caps[] = {30, 2, 1, 13, 6, 2, 5};
    check_batch(&f, first, NULL, 7, 6);
    /* 59 tokens in 7 sequences of at most 30: the caps (64, 8, 32) of the first batch, and
     * the padded shape (7, 30) too: no plan made. Counted, not compared by address (a freed
     * plan's address can come back from malloc). */
    uint64_t made = f.e->plans_made;
    check_batch(&f, same_caps, NULL, 7, 7);
    cr_assert_eq(f.e->plans_made, made, "plans of the same caps and shape are reused");
    /* Other caps, then the first ones again: each still right. */
    const int fewer[] = {40, 3, 1}, more[] = {9, 9, 9, 9, 9, 9, 9, 9};
    check_batch(&f, fewer, NULL, 3, 8);
    check_batch(&f, more, NULL, 8, 9);
    check_batch(&f, first, NULL, 7, 10);
    teardown(&f);
}

/* Two batches of other caps and padded shapes, alternated: each check_batch runs a packed and
 * a padded plan, so after the first round the cache holds four and makes no more. */
Test(encoder_ragged, plans_cached_across_shapes)
{
    fixture f;
    setup(&f);
    const int a[] = {1, 2, 7, 13, 5, 30, 3}, b[] = {40, 3, 1};
    uint64_t made = f.e->plans_made;
    check_batch(&f, a, NULL, 7, 11);
    cr_assert_eq(f.e->plans_made, made + 2, "a packed and a padded plan");
    check_batch(&f, b, NULL, 3, 12);
    cr_assert_eq(f.e->plans_made, made + 4);
    for (int round = 0; round < 2; round++) {
        check_batch(&f, a, NULL, 7, 13 + (uint64_t)round);
        check_batch(&f, b, NULL, 3, 15 + (uint64_t)round);
    }
    cr_assert_eq(f.e->plans_made, made + 4, "alternating shapes reuse the cached plans");
    cr_assert_eq(f.e->idle_count, 4);
    teardown(&f);
}

/* One packed call of `n` sequences of `length` tokens. */
static void run_packed(fixture *f, int n, int length)
{
    int lengths[MAX_SEQ];
    for (int i = 0; i < n; i++)
        lengths[i] = length;
    batch b;
    make_batch(f, lengths, NULL, n, 20, &b);
    encoder_batch in = packed_input(&b);
    float *out = test_poisoned((size_t)n * 3 * f->c.hidden_size);
    EXPECT_OK(f, vkb_encoder_sentences(f->e, &in, 0, out));
    free(out);
    free_batch(&b);
}

/* Five shapes through a cache of four: the least recently used goes. */
Test(encoder_ragged, cache_evicts_the_least_recently_used)
{
    fixture f;
    setup(&f);
    uint64_t made = f.e->plans_made;
    for (int n = 1; n <= 5; n++) /* caps of batch 1, 2, 4, 4 and 8, tokens 8 apart */
        run_packed(&f, n, 8 * n);
    cr_assert_eq(f.e->plans_made, made + 5);
    cr_assert_eq(f.e->idle_count, ENCODER_IDLE_PLANS);
    run_packed(&f, 5, 40); /* the newest: kept */
    run_packed(&f, 2, 16); /* the second: kept */
    cr_assert_eq(f.e->plans_made, made + 5);
    run_packed(&f, 1, 8); /* the first: evicted by the fifth */
    cr_assert_eq(f.e->plans_made, made + 6);
    cr_assert_eq(f.e->idle_count, ENCODER_IDLE_PLANS);
    teardown(&f);
}

/* The budget in bytes: plans held with a new one never exceed it, and one plan always runs. */
Test(encoder_ragged, cache_keeps_to_its_budget)
{
    fixture f;
    setup(&f);
    const int a[] = {1, 2, 7, 13, 5, 30, 3};
    check_batch(&f, a, NULL, 7, 21); /* a packed and a padded plan, both idle */
    cr_assert_eq(f.e->idle_count, 2);
    uint64_t both = encoder_plan_bytes(f.e->idle[0]) + encoder_plan_bytes(f.e->idle[1]);
    cr_assert_eq(encoder_plans_held(f.e), both);
    f.e->plan_budget = both; /* room for the two exactly */
    uint64_t made = f.e->plans_made;
    check_batch(&f, a, NULL, 7, 22);
    cr_assert_eq(f.e->plans_made, made, "both fit in the budget");
    vkb_encoder_drop_plans(f.e);
    f.e->plan_budget = both - 1; /* one byte short: each new plan evicts the other */
    made = f.e->plans_made;
    /* packed, packed inside (the same plan), padded, packed, padded: four made */
    check_batch(&f, a, NULL, 7, 23);
    cr_assert_eq(f.e->plans_made, made + 4, "each plan evicted to make the other");
    cr_assert_eq(f.e->idle_count, 1);
    cr_assert_leq(encoder_plans_held(f.e), both - 1);
    f.e->plan_budget = 1; /* under any plan: still runs, one at a time */
    check_batch(&f, a, NULL, 7, 24);
    cr_assert_eq(f.e->idle_count, 1);
    teardown(&f);
}

/* A right-padded async embed runs packed: its results equal the synchronous packed call's and
 * the reference; its inputs may go as soon as the submit returns. A mask with a hole stays
 * padded. */
Test(encoder_ragged, async_packs_right_padding)
{
    fixture f;
    setup(&f);
    const int lengths[] = {1, 2, 7, 13, 5, 30, 3}, other[] = {40, 3, 1};
    batch a, b;
    make_batch(&f, lengths, NULL, 7, 31, &a);
    make_batch(&f, other, NULL, 3, 32, &b);
    size_t width = 3 * (size_t)f.c.hidden_size;
    float *sync = test_poisoned(7 * width), *async_a = test_poisoned(7 * width);
    float *async_b = test_poisoned(3 * width), *padded = test_poisoned(7 * width);
    double *want = malloc(7 * width * 8), *want_logits = malloc(7 * LABELS * 8);
    reference(&f, &a, want, want_logits);
    encoder_batch in = packed_input(&a);
    EXPECT_OK(&f, vkb_encoder_sentences(f.e, &in, 0, sync));
    run_padded(&f, &a, OUT_SENTENCES, padded);

    /* two jobs in flight, on copies of the inputs freed before the waits */
    size_t cells = (size_t)a.n * a.longest;
    int32_t *ids = malloc(cells * 4), *types = malloc(cells * 4), *mask = malloc(cells * 4);
    memcpy(ids, a.pad_ids, cells * 4), memcpy(types, a.pad_types, cells * 4);
    memcpy(mask, a.pad_mask, cells * 4);
    vkbert_job *job_a, *job_b;
    EXPECT_OK(
        &f, vkbert_encoder_embed_submit(f.e, a.n, a.longest, ids, types, mask, 0, async_a, &job_a));
    free(ids), free(types), free(mask);
    EXPECT_OK(&f, vkbert_encoder_embed_submit(f.e, b.n, b.longest, b.pad_ids, b.pad_types,
                                              b.pad_mask, 0, async_b, &job_b));
    EXPECT_OK(&f, vkbert_job_wait(job_a));
    cr_assert(f.e->plan->ragged, "a right-padded job runs packed");
    EXPECT_OK(&f, vkbert_job_wait(job_b));
    cr_assert(f.e->plan->ragged);
    vkbert_job_destroy(job_a), vkbert_job_destroy(job_b);
    cr_assert(!memcmp(async_a, sync, 7 * width * 4), "the job's results are the packed call's");
    expect_rows(async_a, padded, want, 7, width, "embedding (async)");
    double *want_b = malloc(3 * width * 8), *want_b_logits = malloc(3 * LABELS * 8);
    float *padded_b = test_poisoned(3 * width);
    reference(&f, &b, want_b, want_b_logits);
    run_padded(&f, &b, OUT_SENTENCES, padded_b);
    expect_rows(async_b, padded_b, want_b, 3, width, "embedding (async, second job)");

    /* a hole in a row: padded, as the synchronous calls */
    a.pad_mask[3 * a.longest + 1] = 0; /* row 3: 1 0 1 1 ... */
    run_padded(&f, &a, OUT_SENTENCES, padded);
    vkbert_job *job;
    EXPECT_OK(&f, vkbert_encoder_embed_submit(f.e, a.n, a.longest, a.pad_ids, a.pad_types,
                                              a.pad_mask, 0, async_a, &job));
    EXPECT_OK(&f, vkbert_job_wait(job));
    vkbert_job_destroy(job);
    cr_assert(!f.e->plan->ragged, "a mask with a hole stays padded");
    cr_assert(!memcmp(async_a, padded, 7 * width * 4));

    free(sync), free(async_a), free(async_b), free(padded), free(padded_b);
    free(want), free(want_logits), free(want_b), free(want_b_logits);
    free_batch(&a), free_batch(&b);
    teardown(&f);
}

Test(encoder_ragged, bad_packed_batches)
{
    fixture f;
    setup(&f);
    int32_t ids[4] = {1, 2, 3, 4}, offsets[3] = {0, 3, 3}, types[4] = {0, 1, 2, 0};
    float out[2 * 60];
    encoder_batch in = {2, 3, ids, NULL, NULL, NULL, offsets};
    cr_assert_eq(vkb_encoder_sentences(f.e, &in, 0, out), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(f.ctx), "packed sequence 1 has 0 tokens"), "%s",
              vkbert_last_error(f.ctx));
    offsets[2] = 4, in.types = types;
    cr_assert_eq(vkb_encoder_sentences(f.e, &in, 0, out), VKBERT_ERROR_INVALID_ARGUMENT);
    cr_assert(strstr(vkbert_last_error(f.ctx), "token_type_ids[2]"), "%s",
              vkbert_last_error(f.ctx));
    in.types = NULL, ids[3] = 50;
    cr_assert_eq(vkb_encoder_sentences(f.e, &in, 0, out), VKBERT_ERROR_INVALID_ARGUMENT);
    in.mask = ids;
    cr_assert_eq(vkb_encoder_sentences(f.e, &in, 0, out), VKBERT_ERROR_INVALID_ARGUMENT);
    teardown(&f);
}
