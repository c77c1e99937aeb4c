/* libFuzzer harness for the normalizers (src/io/tok_normalizers.c, tok_charsmap.c, tok_nf.c,
 * tok_norm.c): the input's first byte picks what the rest is. Even: a SentencePiece
 * precompiled_charsmap blob, raw (the harness writes it in base64 into a Precompiled section),
 * so that the trie's offsets, the pool and the grapheme walk meet every shape of data. Odd: a
 * normalizer section of tokenizer.json. A normalizer that loads then runs on fixed texts
 * (accents, ligatures, Hangul, CJK, emoji sequences, marks newer than utf8proc's Unicode, the
 * rules of the real charsmap seed) must give UTF-8 whose every byte aligns to a span inside
 * the original text. */
#include "io/tok_norm_ops.h"
#include "io/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const texts[] = {
    "",
    "Hello  W\u00f6rld \ufb01ne \u212b\u0301 \u1e0b\u0323 \u0130stanbul \u00df\t\n",
    "\u1100\u1161\u11a8 \uac00\u11a8 \u4e2d\u6587 \u3000 \uff21\uff22 \u2460 \u00bd",
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 \xf0\x9f\x87\xab\xf0\x9f\x87\xb7 a\u1ad4\u0301",
    "e\u0301\u0323\u0302 \u0915\u094d\u0937 \u2581 \x7f\x01 \ufffd",
    "cafe\u0301 A\u030a \u1e9e\u200b\U0001F600 \ufdfa \u2460\u00a0x \U0010ffff\u0800\u07ff",
};

/* What normalizing keeps: UTF-8 (its structure; the sources' own checks are stricter), and each
 * byte's span inside the original text. */
static void check(const tok_norm *t, size_t original_len)
{
    for (size_t i = 0, len; i < t->n; i += len) {
        unsigned char b = (unsigned char)t->s[i];
        len = b < 0x80             ? 1
              : (b & 0xE0) == 0xC0 ? 2
              : (b & 0xF0) == 0xE0 ? 3
              : (b & 0xF8) == 0xF0 ? 4
                                   : 0;
        if (!len || i + len > t->n) abort();
        for (size_t k = 1; k < len; k++)
            if (((unsigned char)t->s[i + k] & 0xC0) != 0x80) abort();
    }
    if (t->s[t->n] != 0) abort();
    for (size_t i = 0; i < t->n; i++)
        if (t->align[2 * i] > t->align[2 * i + 1] || t->align[2 * i + 1] > original_len) abort();
}

static const char base64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* {"type": "Precompiled", "precompiled_charsmap": base64 of b[0..n)}, or NULL. */
static char *precompiled_section(const uint8_t *b, size_t n)
{
    static const char head[] = "{\"type\": \"Precompiled\", \"precompiled_charsmap\": \"";
    char *s = malloc(sizeof head + (n + 2) / 3 * 4 + 3);
    if (!s) return NULL;
    memcpy(s, head, sizeof head - 1);
    char *w = s + sizeof head - 1;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        for (int k = 0; k < 4; k++)
            *w++ = (size_t)k <= (n - i) ? base64_digits[(v >> (18 - 6 * k)) & 63] : '=';
    }
    memcpy(w, "\"}", 3);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1 << 20)) return 0;
    char *json;
    if (data[0] % 2 == 0) {
        json = precompiled_section(data + 1, size - 1);
    } else if (tok_utf8_prefix((const char *)data + 1, size - 1) != size - 1) {
        return 0; /* tokenizer.json is read only when it is UTF-8, as serde_json reads it */
    } else {
        json = malloc(size);
        if (json) {
            memcpy(json, data + 1, size - 1);
            json[size - 1] = 0;
        }
    }
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    free(json);
    char err[512];
    err_ctx c = {"fuzz", err, sizeof err};
    tok_normalizer *n = NULL;
    if (j && tok_normalizer_load(&c, j, &n) == 0) {
        char name[256];
        tok_normalizer_describe(n, name, sizeof name);
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
            tok_norm t;
            if (tok_norm_init(&c, &t, texts[i], strlen(texts[i]), 0) != 0) continue;
            if (tok_normalizer_run(&c, n, &t) == 0) check(&t, strlen(texts[i]));
            tok_norm_free(&t);
        }
    }
    tok_normalizer_free(n);
    cJSON_Delete(j);
    return 0;
}
