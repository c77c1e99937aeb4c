/* The normalizers (src/io/tok_normalizers.c) from the command line, for the parity test that
 * compares them with tokenizers (tests/parity/test_tok_normalizers.py):
 *
 *   tok_normalizer_driver NORMALIZER.json TEXTS.json
 *
 * NORMALIZER.json holds one tokenizer.json "normalizer" section, TEXTS.json a list of strings.
 * Prints a JSON list with, per text, {"s": the normalized text, "spans": [[start, end], ...]}:
 * for each character of the normalized text, the span of the original it came from, in
 * characters (the offsets tokenizers' Python binding reports). Exits 1 with the message on a
 * load error; a text that fails to normalize gives {"error": message}. */
#include "io/tok_norm_ops.h"
#include "tok_driver_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_string(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* How many characters of s start before byte b. */
static size_t chars_before(const char *s, size_t b)
{
    size_t k = 0;
    for (size_t i = 0; i < b; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static void print_result(const char *original, const tok_norm *t)
{
    printf("{\"s\": ");
    print_string(t->s, t->n);
    printf(", \"spans\": [");
    for (size_t i = 0, len; i < t->n; i += len) {
        tok_utf8_next(t->s + i, t->n - i, &len);
        size_t start, end;
        tok_norm_span(t, i, i + len, &start, &end);
        printf("%s[%zu, %zu]", i ? ", " : "", chars_before(original, start),
               chars_before(original, end));
    }
    printf("]}");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s NORMALIZER.json TEXTS.json\n", argv[0]);
        return 2;
    }
    char err[512] = "";
    err_ctx c = {argv[1], err, sizeof err};
    char *config = tok_driver_read_file(argv[1]), *texts = tok_driver_read_file(argv[2]);
    cJSON *j = config ? cJSON_Parse(config) : NULL, *list = texts ? cJSON_Parse(texts) : NULL;
    tok_normalizer *n = NULL;
    int rc = 1;
    if (!j || !cJSON_IsArray(list)) {
        fprintf(stderr, "%s, %s: unreadable or not JSON\n", argv[1], argv[2]);
    } else if (tok_normalizer_load(&c, j, &n) != 0) {
        fprintf(stderr, "%s\n", err);
    } else {
        const cJSON *item;
        int first = 1;
        putchar('[');
        cJSON_ArrayForEach(item, list)
        {
            const char *s = cJSON_IsString(item) ? item->valuestring : "";
            tok_norm t;
            printf(first ? "" : ",\n");
            first = 0;
            if (tok_norm_init(&c, &t, s, strlen(s), 0) != 0 || tok_normalizer_run(&c, n, &t) != 0) {
                printf("{\"error\": ");
                print_string(err, strlen(err));
                printf("}");
            } else {
                print_result(s, &t);
            }
            tok_norm_free(&t);
        }
        printf("]\n");
        rc = 0;
    }
    tok_normalizer_free(n);
    cJSON_Delete(j);
    cJSON_Delete(list);
    free(config);
    free(texts);
    return rc;
}
