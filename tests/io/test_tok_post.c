/* Tests for the post-processors and decoders (src/io/tok_post*.c, tok_decoders*.c): what their
 * loaders refuse, by name, and cases worked out by hand from tokenizers' rules (the decoders/ and
 * processors/ files). Their parity with tokenizers itself over thousands of texts is
 * tests/parity/test_tok_post_decoders.py's. */
#include "io/tok_pipeline.h"

#include <criterion/criterion.h>
#include <string.h>

static char err[512];
static const err_ctx ctx = {"tokenizer.json", err, sizeof err};

static tok_decoder *decoder(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "%s", json);
    tok_decoder *d = NULL;
    cr_assert_eq(tok_decoder_load(&ctx, j, &d), 0, "%s: %s", json, err);
    cJSON_Delete(j);
    return d;
}

static void refused(const char *json, int post, const char *expected)
{
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "%s", json);
    strcpy(err, "(unset)");
    void *out = (void *)1;
    int rc = post ? tok_post_load(&ctx, j, (tok_post **)&out)
                  : tok_decoder_load(&ctx, j, (tok_decoder **)&out);
    cr_assert_eq(rc, -1, "%s loaded", json);
    cr_assert_null(out);
    cr_assert_not_null(strstr(err, expected), "%s: \"%s\" lacks \"%s\"", json, err, expected);
    cJSON_Delete(j);
}

/* Decodes tokens[0..n) and compares the list with want[0..m). */
static void decodes(const char *json, const char *const *tokens, size_t n, const char *const *want,
                    size_t m)
{
    tok_decoder *d = decoder(json);
    tok_strs s = {0};
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(tok_strs_push(&ctx, &s, tokens[i], strlen(tokens[i])), 0);
    cr_assert_eq(tok_decoder_run(&ctx, d, &s), 0, "%s: %s", json, err);
    cr_assert_eq(s.n, m, "%s: %zu tokens, expected %zu", json, s.n, m);
    for (size_t i = 0; i < m; i++)
        cr_assert_str_eq(s.v[i], want[i], "%s: token %zu", json, i);
    tok_strs_free(&s);
    tok_decoder_free(d);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

Test(tok_decoders, refusals_name_the_component_and_key)
{
    refused("{\"type\":\"CTC\",\"pad_token\":\"<pad>\"}", 0, "decoder: type \"CTC\"");
    refused("{\"type\":\"ByteLevel\"}", 0, "decoder: ByteLevel: add_prefix_space: missing");
    refused("{\"type\":\"Fuse\",\"x\":1}", 0, "decoder: Fuse: unknown key \"x\"");
    refused("{\"type\":\"Metaspace\",\"replacement\":\"ab\"}", 0,
            "decoder: Metaspace: replacement: expected one character");
    refused("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false}", 0,
            "add_prefix_space false with prepend_scheme \"always\"");
    refused("{\"type\":\"Strip\",\"content\":\" \",\"start\":-1,\"stop\":0}", 0,
            "decoder: Strip: start");
    refused("{\"type\":\"Replace\",\"pattern\":{\"Glob\":\"*\"},\"content\":\"\"}", 0,
            "decoder: Replace: pattern");
    refused("{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Nope\"}]}", 0, "\"Nope\"");
}

Test(tok_decoders, cases_by_hand)
{
    /* a '+' is a sign to Rust's from_str_radix; invalid byte runs give a U+FFFD per byte */
    const char *fb[] = {"<0x+F>", "a", "<0xE2>", "<0x82>", "b", "<0xE2>", "<0x82>", "<0xAC>"};
    const char *fb_want[] = {"\x0f", "a", "\uFFFD", "\uFFFD", "b", "\u20AC"};
    decodes("{\"type\":\"ByteFallback\"}", fb, N(fb), fb_want, N(fb_want));
    /* one U+FFFD for a truncated sequence, one for a lone byte */
    const char *bl[] = {"\u0120hello", "\u00e2\u0124", "x", "\u00e9"};
    const char *bl_want[] = {" hello\uFFFDx\uFFFD"};
    decodes("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true}", bl, N(bl),
            bl_want, N(bl_want));
    const char *wp[] = {"I", "do", "not", "##n't", "'", "s", "."};
    const char *wp_want[] = {"I", " do", " not", "n't", " '", " s", "."};
    decodes("{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true}", wp, N(wp), wp_want,
            N(wp_want));
    const char *ms[] = {"\u2581a\u2581b", "\u2581c"};
    const char *ms_want[] = {"ab", " c"};
    decodes("{\"type\":\"Metaspace\",\"replacement\":\"\u2581\"}", ms, N(ms), ms_want, N(ms_want));
    const char *bpe[] = {"a</w>", "b</w>c</w>"};
    const char *bpe_want[] = {"a ", "bc"};
    decodes("{\"type\":\"BPEDecoder\",\"suffix\":\"</w>\"}", bpe, N(bpe), bpe_want, N(bpe_want));
    const char *st[] = {"  a  ", "b"};
    const char *st_want[] = {" a ", "b"};
    decodes("{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":1}", st, N(st), st_want,
            N(st_want));
    /* an empty String pattern matches before every character and at the end */
    const char *rp[] = {"abc", ""};
    const char *rp_want[] = {"xaxbxcx", ""};
    decodes("{\"type\":\"Replace\",\"pattern\":{\"String\":\"\"},\"content\":\"x\"}", rp, N(rp),
            rp_want, N(rp_want));
}

Test(tok_decoders, where_tokenizers_panics_an_error)
{
    tok_decoder *d = decoder("{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":1}");
    tok_strs s = {0};
    cr_assert_eq(tok_strs_push(&ctx, &s, " ", 1), 0);
    cr_assert_eq(tok_decoder_run(&ctx, d, &s), -1);
    cr_assert_not_null(strstr(err, "decoder: Strip"), "%s", err);
    cr_assert_eq(s.n, 1); /* left as it was */
    tok_strs_free(&s);
    tok_decoder_free(d);
}

Test(tok_post, refusals_name_the_component_and_key)
{
    refused("{\"type\":\"Nope\"}", 1, "post_processor: type \"Nope\"");
    refused("{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[X]\","
            "\"type_id\":0}}],\"pair\":[],\"special_tokens\":{}}",
            1, "special token \"[X]\" is not in special_tokens");
    refused("{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"B\","
            "\"type_id\":0}}],\"pair\":[],\"special_tokens\":{}}",
            1, "$B in the template of one text");
    refused("{\"type\":\"TemplateProcessing\",\"single\":[\"$A\"],\"pair\":[],"
            "\"special_tokens\":{}}",
            1, "TemplateProcessing: single: expected {\"Sequence\"");
    refused("{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\"],\"cls\":[\"[CLS]\",1]}", 1,
            "post_processor: BertProcessing: sep: expected [token, id]");
    refused("{\"type\":\"ByteLevel\",\"trim_offsets\":true}", 1,
            "post_processor: ByteLevel: add_prefix_space: missing");
}

static const char *view_token(const void *ctx_, int32_t id, size_t *len)
{
    static const char *const toks[] = {"<s>", "</s>", "\u0120hi", "\u0120\u0120", "x"};
    (void)ctx_;
    if (id < 0 || id > 4) return NULL;
    *len = strlen(toks[id]);
    return toks[id];
}

Test(tok_post, roberta_trims_and_adds)
{
    cJSON *j = cJSON_Parse("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",1],\"cls\":"
                           "[\"<s>\",0],\"trim_offsets\":true,\"add_prefix_space\":false}");
    tok_post *p = NULL;
    cr_assert_eq(tok_post_load(&ctx, j, &p), 0, "%s", err);
    cJSON_Delete(j);
    cr_assert_eq(tok_post_added(p, 0), 2);
    cr_assert_eq(tok_post_added(p, 1), 4);
    /* "x hi  " as x, " hi", "  ": the space off " hi", both off the last (an empty span) */
    const char *text = "x hi  ";
    tok_enc a = {0}, out = {0};
    cr_assert_eq(tok_enc_push(&ctx, &a, 4, 7, 0, 0, 1, 0), 0);
    cr_assert_eq(tok_enc_push(&ctx, &a, 2, 7, 0, 1, 4, 0), 0);
    cr_assert_eq(tok_enc_push(&ctx, &a, 3, 7, 0, 4, 6, 0), 0);
    const tok_vocab_view v = {view_token, NULL};
    const char *const texts[2] = {text, NULL};
    cr_assert_eq(tok_post_run(&ctx, p, &v, &a, NULL, texts, 1, &out), 0, "%s", err);
    const int32_t ids[] = {0, 4, 2, 3, 1}, special[] = {1, 0, 0, 0, 1};
    const size_t starts[] = {0, 0, 2, 6, 0}, ends[] = {0, 1, 4, 6, 0};
    cr_assert_eq(out.n, 5);
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(out.ids[i], ids[i]);
        cr_assert_eq(out.type_ids[i], 0);
        cr_assert_eq(out.special[i], special[i]);
        cr_assert_eq(out.starts[i], starts[i], "token %zu starts at %zu", i, out.starts[i]);
        cr_assert_eq(out.ends[i], ends[i], "token %zu ends at %zu", i, out.ends[i]);
    }
    tok_enc_free(&a);
    tok_enc_free(&out);
    tok_post_free(p);
}

/* The forms older tokenizer.json files hold, and what `vkbert info` shows of them. */
Test(tok_decoders, older_forms_and_descriptions)
{
    char desc[128];
    tok_decoder *d = decoder("{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Metaspace\","
                             "\"replacement\":\"\u2581\",\"str_rep\":\"\u2581\","
                             "\"add_prefix_space\":true},{\"type\":\"ByteLevel\","
                             "\"add_prefix_space\":false,\"trim_offsets\":true,"
                             "\"use_regex\":true},{\"type\":\"Fuse\"}]}");
    tok_decoder_describe(d, desc, sizeof desc);
    cr_assert_str_eq(desc, "Sequence[Metaspace, ByteLevel, Fuse]");
    tok_decoder_describe(d, desc, 12); /* cut short, still terminated */
    cr_assert_str_eq(desc, "Sequence[Me");
    tok_decoder_free(d);
}

/* tokenizers reads Bert and Roberta by their members: a RobertaProcessing without
 * trim_offsets and add_prefix_space is a BertProcessing to it. */
Test(tok_post, bert_and_roberta_by_their_members)
{
    char desc[128];
    cJSON *j = cJSON_Parse("{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],"
                           "\"cls\":[\"<s>\",0]}");
    tok_post *p = NULL;
    cr_assert_eq(tok_post_load(&ctx, j, &p), 0, "%s", err);
    cJSON_Delete(j);
    tok_post_describe(p, desc, sizeof desc);
    cr_assert_str_eq(desc, "BertProcessing");
    cr_assert_eq(tok_post_added(p, 1), 3);
    tok_post_free(p);
}
