/* libFuzzer harness for the Precompiled normalizer (src/io/tok_charsmap.c): the input is the
 * decoded precompiled_charsmap blob (its trie size, double-array trie and string pool, all
 * untrusted), given base64-encoded to the normalizer's loader as tokenizer.json carries it; a
 * map that loads then normalizes fixed texts (the rules of the seed's map, graphemes of 6 bytes
 * and more, every byte length of UTF-8). Loading and normalizing must fail cleanly or give
 * valid UTF-8 whose every byte aligns to a span inside the original text. */
#define _GNU_SOURCE /* fuzz_util.h: memfd_create, mkdtemp, nftw */
#include "fuzz_util.h"
#include "io/tok_pipeline.h"

#include <cjson/cJSON.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const texts[] = {
    "",
    "Hello world, caf\u00e9 cafe\u0301 A\u030a \u212b \u1e9e \ufb01ne \uff21 \u2460\u00a0\u3000x",
    "\u200b\U0001F600\u200d \U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F44D\U0001F3FD "
    "\U0001F1EB\U0001F1F7 1\ufe0f\u20e3 \ufdfa",
    "\t\r\n \x7f\xc2\x80\xc2\xad \u4e2d\u6587 \u3053\u3093 \ud55c \u0915\u094d\u0937 "
    "\u0e01\u0e33 \u05e9\u05c1 \u0627\u0644\u0644\u0647 e\u0301\u0302\u0303\u0304\u0305",
    "\x01\x02 !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnop"
    "qrstuvwxyz{|}~ \u00c0\u00ff\u0100\u07ff\u0800\uffff\U00010000\U0010ffff",
};

/* Standard base64 with padding, as tokenizers writes the charsmap. */
static char *base64(const uint8_t *d, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *p = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) |
                     (i + 2 < n ? d[i + 2] : 0);
        for (int k = 0; k < 4; k++)
            *p++ = k <= (int)(n - i) ? digits[(v >> (18 - 6 * k)) & 63] : '=';
    }
    *p = 0;
    return out;
}

static int valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char b = (unsigned char)s[i];
        size_t len = b < 0x80             ? 1
                     : (b & 0xE0) == 0xC0 ? 2
                     : (b & 0xF0) == 0xE0 ? 3
                     : (b & 0xF8) == 0xF0 ? 4
                                          : 0;
        if (!len || i + len > n) return 0;
        for (size_t k = 1; k < len; k++)
            if (((unsigned char)s[i + k] & 0xC0) != 0x80) return 0;
        i += len;
    }
    return 1;
}

/* What normalizing must keep: UTF-8 out, and each byte's span inside the original text. */
static void check(const tok_norm *t, size_t original_len)
{
    if (!valid_utf8(t->s, t->n) || t->s[t->n] != 0) abort();
    for (size_t i = 0; i < t->n; i++)
        if (t->align[2 * i] > t->align[2 * i + 1] || t->align[2 * i + 1] > original_len) abort();
}

static void normalize(const tok_normalizer *norm, const char *text)
{
    char err[256];
    err_ctx c = {"fuzz_charsmap", err, sizeof err};
    tok_norm t = {0};
    size_t n = strlen(text);
    if (tok_norm_init(&c, &t, text, n, 0) == 0 && tok_normalizer_run(&c, norm, &t) == 0)
        check(&t, n);
    tok_norm_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *b64 = base64(data, size), err[256];
    cJSON *j = cJSON_CreateObject();
    if (!b64 || !j || !cJSON_AddStringToObject(j, "type", "Precompiled") ||
        !cJSON_AddStringToObject(j, "precompiled_charsmap", b64)) {
        fuzz_setup_failed("out of memory for the normalizer's JSON");
        free(b64);
        cJSON_Delete(j);
        return 0;
    }
    free(b64);
    err_ctx c = {"fuzz_charsmap", err, sizeof err};
    tok_normalizer *norm;
    if (tok_normalizer_load(&c, j, &norm) == 0) {
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
            normalize(norm, texts[i]);
        tok_normalizer_free(norm);
    }
    cJSON_Delete(j);
    return 0;
}
