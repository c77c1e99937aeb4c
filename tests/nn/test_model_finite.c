/* A model whose weights are finite but whose activations overflow float32 (the embeddings'
 * LayerNorm scaled to 3e38): every model call refuses the result with
 * VKBERT_ERROR_DEVICE_LIMIT and a message saying so, and `vkbert embed`, `rerank` and
 * `classify` exit 1 with that message and write nothing. */
#define _POSIX_C_SOURCE 200809L

#include "io/bert_model.h"
#include "st_folder.h"
#include "support.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                    "the",   "cat",   "sat",   "a",     "dog"};
#define VOCAB_SIZE ((int)(sizeof vocab / sizeof *vocab))
#define MESSAGE "the model produced non-finite values (inf or NaN)"

static char plain_dir[256], cross_dir[256];

/* A BERT folder (a one-label cross-encoder when labels is 1) whose embeddings' LayerNorm has
 * gamma and beta 3e38: its output overflows to inf, and what follows is inf or NaN. */
static void overflow_embeddings(const bert_config *c, bert_weights *w)
{
    for (int i = 0; i < c->hidden_size; i++)
        w->ln_gamma[i] = w->ln_beta[i] = 3e38f;
}

static void write_huge(const char *dir, int labels)
{
    tiny_bert spec = {.config = tiny_bert_small(VOCAB_SIZE, labels),
                      .seed = 5,
                      .prefix = labels ? "bert." : NULL,
                      .vocab = vocab,
                      .vocab_count = VOCAB_SIZE,
                      .edit = overflow_embeddings};
    tiny_bert_write(dir, &spec, NULL);
}

static void setup(void)
{
    test_tmpdir_setup();
    test_tmp_path(plain_dir, "plain");
    test_tmp_path(cross_dir, "cross");
    write_huge(plain_dir, 0);
    write_huge(cross_dir, 1);
}

static void teardown(void)
{
    test_dir_remove(test_tmpdir);
}

TestSuite(model_finite, .init = setup, .fini = teardown, .timeout = 120);

static void expect_non_finite(vkbert_context *ctx, vkbert_status status, const char *call)
{
    cr_assert_eq(status, VKBERT_ERROR_DEVICE_LIMIT, "%s: %s: %s", call, vkbert_status_name(status),
                 vkbert_last_error(ctx));
    cr_assert(strstr(vkbert_last_error(ctx), MESSAGE), "%s: %s", call, vkbert_last_error(ctx));
}

static vkbert_model *load(vkbert_context *ctx, const char *dir)
{
    vkbert_model *m = NULL;
    vkbert_status status = vkbert_model_load(ctx, dir, NULL, &m);
    cr_assert_eq(status, VKBERT_OK, "%s", vkbert_last_error(ctx));
    return m;
}

static const char *const texts[] = {"the cat sat", "a dog"};

Test(model_finite, every_model_call_refuses_the_result)
{
    vkbert_context *ctx = test_context(0);
    vkbert_model *plain = load(ctx, plain_dir), *cross = load(ctx, cross_dir);
    float out[2 * 64];
    cr_assert_leq(vkbert_model_dimension(plain), 64);
    expect_non_finite(ctx, vkbert_model_embed(plain, texts, 2, NULL, out), "embed");
    expect_non_finite(ctx, vkbert_model_rerank(cross, "the cat", texts, 2, 0, out), "rerank");
    expect_non_finite(ctx, vkbert_model_classify(cross, texts, 2, out), "classify");
    vkbert_encoding in = VKBERT_ENCODING_INIT;
    TEST_OK(vkbert_model_encode(plain, "the cat", NULL, NULL, &in));
    expect_non_finite(ctx, vkbert_model_embed_inputs(plain, &in, 1, 0, out), "embed_inputs");
    vkbert_encoding_free(&in);
    TEST_OK(vkbert_model_encode(cross, "the cat", "a dog", NULL, &in));
    expect_non_finite(ctx, vkbert_model_score_inputs(cross, &in, 1, 1, out), "score_inputs");
    vkbert_encoding_free(&in);
    vkbert_model_destroy(plain);
    vkbert_model_destroy(cross);
    test_context_done(ctx);
}

static void expect_cli_refusal(const char *const *args)
{
    test_cli_result r;
    test_run_cli(test_tmpdir, args, &r);
    cr_assert_eq(r.code, 1, "%s exited %d:\n%s", args[0], r.code, r.err);
    cr_assert(strstr(r.err, MESSAGE), "%s: %s", args[0], r.err);
    cr_assert_str_empty(r.out, "%s printed: %s", args[0], r.out);
}

Test(model_finite, the_cli_exits_1_and_writes_nothing)
{
    char npy[256];
    test_tmp_path(npy, "e.npy");
    const char *embed[] = {"embed", "--model", plain_dir, "the cat", NULL};
    const char *embed_npy[] = {"embed", "--model", plain_dir, "--output", npy, "the cat", NULL};
    const char *rerank[] = {"rerank", "--model", cross_dir, "--query", "the cat", "a dog", NULL};
    const char *classify[] = {"classify", "--model", cross_dir, "the cat", NULL};
    expect_cli_refusal(embed);
    expect_cli_refusal(embed_npy);
    cr_assert_neq(access(npy, F_OK), 0, "%s was written", npy);
    expect_cli_refusal(rerank);
    expect_cli_refusal(classify);
}
