/* Tests for the normalized string and the normalizers (src/io/tok_norm.c, tok_normalizers.c,
 * tok_charsmap.c): the alignments of tokenizers' NormalizedString worked out by hand from
 * tokenizers/src/tokenizer/normalizer.rs, and the loaders' refusals. Their parity with
 * tokenizers over the shared text set is tests/parity/test_tok_normalizers.py. */
#include "io/tok_norm_ops.h"

#include <criterion/criterion.h>
#include <string.h>

static char err[512];
static const err_ctx ctx = {"test", err, sizeof err};

/* A normalized string of s whose original starts at byte 100 of some text. */
static tok_norm text(const char *s)
{
    tok_norm t;
    cr_assert_eq(tok_norm_init(&ctx, &t, s, strlen(s), 100), 0);
    return t;
}

static void assert_align(const tok_norm *t, size_t byte, size_t start, size_t end)
{
    cr_assert_eq(t->align[2 * byte], start, "byte %zu starts at %zu, not %zu", byte,
                 t->align[2 * byte], start);
    cr_assert_eq(t->align[2 * byte + 1], end, "byte %zu ends at %zu, not %zu", byte,
                 t->align[2 * byte + 1], end);
}

static tok_normalizer *load(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j);
    tok_normalizer *n = (tok_normalizer *)0x1; /* poisoned: a failed load must set NULL */
    int rc = tok_normalizer_load(&ctx, j, &n);
    cJSON_Delete(j);
    cr_assert_eq(rc == 0, n != NULL);
    return n;
}

static void refused(const char *json, const char *word)
{
    err[0] = 0;
    cr_assert_null(load(json), "%s loaded", json);
    cr_assert_not_null(strstr(err, word), "\"%s\" does not name %s", err, word);
}

Test(tok_norm, every_byte_comes_from_its_whole_character)
{
    tok_norm t = text("a\u00e9\u4e2d");
    assert_align(&t, 0, 100, 101);
    assert_align(&t, 1, 101, 103);
    assert_align(&t, 2, 101, 103);
    assert_align(&t, 5, 103, 106);
    cr_assert_eq(t.origin, 100);
    tok_norm_free(&t);
}

Test(tok_norm, an_empty_range_converts_as_it_is)
{
    tok_norm t = text("\u00e9\u00e9");
    size_t start = 0, end = 0;
    tok_norm_span(&t, 2, 2, &start, &end); /* convert_offsets gives 2..2 back, as original */
    cr_assert_eq(start, 102);
    cr_assert_eq(end, 102);
    tok_norm_span(&t, 0, 4, &start, &end);
    cr_assert_eq(start, 100);
    cr_assert_eq(end, 104);
    tok_norm slice;
    cr_assert_eq(tok_norm_slice(&ctx, &t, 2, 4, &slice), 0);
    cr_assert_eq(slice.origin, 102);
    assert_align(&slice, 1, 102, 104);
    tok_norm_free(&slice);
    tok_norm_free(&t);
}

Test(tok_norm, transform_aligns_replaced_inserted_and_removed_characters)
{
    tok_norm t = text("abcd");
    /* "abcd" -> "XYd": X replaces a, Y is inserted after it, d replaces b and removes c, d */
    const tok_change ch[] = {{'X', 0}, {'Y', 1}, {'d', -2}};
    cr_assert_eq(tok_norm_transform(&ctx, &t, 0, 4, ch, 3, 0), 0);
    cr_assert_str_eq(t.s, "XYd");
    assert_align(&t, 0, 100, 101);
    assert_align(&t, 1, 100, 101); /* inserted: the alignment of the character before it */
    assert_align(&t, 2, 101, 102);
    tok_norm_free(&t);
}

Test(tok_norm, an_insertion_at_the_start_sits_at_the_origin)
{
    tok_norm t = text("ab");
    const tok_change ch[] = {{'_', 1}, {'b', 0}};
    cr_assert_eq(tok_norm_transform(&ctx, &t, 0, 2, ch, 2, 1), 0); /* a removed first */
    cr_assert_str_eq(t.s, "_b");
    assert_align(&t, 0, 100, 101); /* inserted after the removed a: a's alignment */
    assert_align(&t, 1, 101, 102);
    tok_norm_free(&t);
    t = text("ab");
    const tok_change front[] = {{'_', 1}, {'a', 0}, {'b', 0}};
    cr_assert_eq(tok_norm_transform(&ctx, &t, 0, 2, front, 3, 0), 0);
    assert_align(&t, 0, 100, 100); /* tokenizers' (0, 0), of the slice's original */
    tok_norm_free(&t);
}

Test(tok_norm, a_transformation_past_the_end_is_an_error)
{
    tok_norm t = text("a");
    const tok_change ch[] = {{'a', 0}, {'b', 0}};
    cr_assert_eq(tok_norm_transform(&ctx, &t, 0, 1, ch, 2, 0), -1);
    cr_assert_not_null(strstr(err, "past the text's end"));
    tok_norm_free(&t);
}

Test(tok_norm, strip_and_prepend)
{
    tok_norm t = text("  a b\u3000");
    cr_assert_eq(tok_norm_strip(&ctx, &t, 1, 1), 0);
    cr_assert_str_eq(t.s, "a b");
    assert_align(&t, 0, 102, 103);
    cr_assert_eq(tok_norm_prepend(&ctx, &t, "\u2581", strlen("\u2581")), 0);
    cr_assert_str_eq(t.s, "\u2581a b");
    assert_align(&t, 0, 102, 103); /* the prefix takes the first character's alignment */
    assert_align(&t, 3, 102, 103);
    tok_norm_free(&t);
}

Test(tok_normalizers, nfkc_and_lowercase_through_a_sequence)
{
    tok_normalizer *n = load("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKC\"},"
                             " {\"type\": \"Lowercase\"}]}");
    tok_norm t = text("\ufb01A\u0301");
    cr_assert_eq(tok_normalizer_run(&ctx, n, &t), 0);
    cr_assert_str_eq(t.s, "fi\u00e1");
    assert_align(&t, 0, 100, 103); /* f and i both from the ligature */
    assert_align(&t, 1, 100, 103);
    assert_align(&t, 2, 103, 104); /* á from A and its mark: A's alignment */
    char name[64];
    tok_normalizer_describe(n, name, sizeof name);
    cr_assert_str_eq(name, "Sequence[NFKC, Lowercase]");
    tok_normalizer_describe(n, name, 12);
    cr_assert_str_eq(name, "Sequence...");
    tok_normalizer_free(n);
    tok_norm_free(&t);
}

Test(tok_normalizers, the_loader_refuses_by_name)
{
    refused("{\"type\": \"Frobnicate\"}", "Frobnicate");
    refused("[1]", "type");
    refused("{\"type\": \"Strip\", \"strip_left\": true}", "strip_right");
    refused("{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": 1}", "strip_right");
    refused("{\"type\": \"Lowercase\", \"locale\": \"tr\"}", "locale");
    refused("{\"type\": \"Replace\", \"pattern\": {\"Glob\": \"*\"}, \"content\": \"\"}",
            "pattern");
    refused("{\"type\": \"Replace\", \"pattern\": {\"String\": \"\"}, \"content\": \"\"}", "empty");
    refused("{\"type\": \"Prepend\"}", "prepend");
    refused("{\"type\": \"BertNormalizer\", \"clean_text\": true}", "handle_chinese_chars");
    refused("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {}]}", "type");
}

Test(tok_charsmap, malformed_blobs_are_errors)
{
    refused("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"abc\"}", "base64");
    refused("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"a=bc\"}", "base64");
    refused("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"AAA=\"}", "too short");
    refused("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"AAAAAA==\"}", "empty trie");
    refused("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"/////wAAAAA=\"}", "units");
    /* a trie of one unit and a pool that is not UTF-8 */
    refused("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"BAAAAAAAAAD/\"}", "UTF-8");
}

Test(tok_charsmap, an_offset_out_of_the_trie_is_an_error_when_read)
{
    /* one unit whose offset leads far past the trie: the first byte looked up leaves it */
    tok_normalizer *n = load("{\"type\": \"Precompiled\", \"precompiled_charsmap\": "
                             "\"BAAAAAD8//8=\"}");
    tok_norm t = text("a");
    cr_assert_eq(tok_normalizer_run(&ctx, n, &t), -1);
    cr_assert_not_null(strstr(err, "out of bounds"));
    tok_norm_free(&t);
    tok_normalizer_free(n);
}

Test(tok_charsmap, an_empty_charsmap_changes_nothing)
{
    tok_normalizer *n = load("{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"\"}");
    tok_norm t = text("a\u00e9");
    cr_assert_eq(tok_normalizer_run(&ctx, n, &t), 0);
    cr_assert_str_eq(t.s, "a\u00e9");
    tok_norm_free(&t);
    tok_normalizer_free(n);
}
