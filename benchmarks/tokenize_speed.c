/* The tokenizer's own speed, one thread, through the public API: a model folder's tokenizer
 * encodes every text of a file (texts separated by NUL bytes, UTF-8) with no truncation, once
 * to warm up, then `repeats` timed passes. Prints JSON: the texts, their bytes, the tokens of
 * one pass, each pass's wall seconds and its CPU seconds (clock(): the process, one thread).
 * benchmarks/tokenizer_speed.py runs it beside HF tokenizers. tokenize_speed DIR TEXTS_FILE
 * [repeats=5] */
#include "platform/platform.h"
#include "vkbert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct text_set {
    char *data;   /* the file, with a NUL after its last byte */
    char **texts; /* into data */
    size_t count, bytes;
} text_set;

static int read_texts(const char *path, text_set *set)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "tokenize_speed: cannot open %s\n", path), -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    set->data = size >= 0 ? malloc((size_t)size + 1) : NULL;
    int ok = set->data && fread(set->data, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok) return fprintf(stderr, "tokenize_speed: cannot read %s\n", path), -1;
    set->data[size] = '\0';
    set->count = 0;
    for (long i = 0; i < size; i++)
        set->count += set->data[i] == '\0';
    set->count += size > 0 && set->data[size - 1] != '\0';
    set->texts = malloc((set->count ? set->count : 1) * sizeof *set->texts);
    if (!set->texts) return fprintf(stderr, "tokenize_speed: out of memory\n"), -1;
    char *p = set->data;
    set->bytes = 0; /* of the texts, not their separators */
    for (size_t i = 0; i < set->count; i++, p += strlen(p) + 1) {
        set->texts[i] = p;
        set->bytes += strlen(p);
    }
    return 0;
}

/* One pass over every text; *tokens gets the ids of the pass. */
static int encode_all(const vkbert_tokenizer *t, const text_set *set, long *tokens)
{
    *tokens = 0;
    for (size_t i = 0; i < set->count; i++) {
        vkbert_encoding e = VKBERT_ENCODING_INIT;
        if (vkbert_tokenizer_encode(t, set->texts[i], NULL, -1, &e) != VKBERT_OK) {
            fprintf(stderr, "tokenize_speed: text %zu: %s\n", i, vkbert_last_error(NULL));
            return -1;
        }
        *tokens += e.count;
        vkbert_encoding_free(&e);
    }
    return 0;
}

static void print_list(const char *name, const double *values, int count)
{
    printf(", \"%s\": [", name);
    for (int i = 0; i < count; i++)
        printf("%s%.6f", i ? ", " : "", values[i]);
    putchar(']');
}

/* The warm-up, then `repeats` timed passes: wall[] and cpu[] get their seconds. */
static int time_passes(const vkbert_tokenizer *t, const text_set *set, int repeats, double *wall,
                       double *cpu, long *tokens)
{
    if (encode_all(t, set, tokens)) return -1;
    for (int r = 0; r < repeats; r++) {
        double start = plat_now_ms();
        clock_t cpu_start = clock();
        if (encode_all(t, set, tokens)) return -1;
        cpu[r] = (double)(clock() - cpu_start) / CLOCKS_PER_SEC;
        wall[r] = (plat_now_ms() - start) / 1000.0;
    }
    return 0;
}

static int run(const char *dir, const text_set *set, int repeats)
{
    vkbert_tokenizer *t = NULL;
    if (vkbert_tokenizer_load(dir, &t) != VKBERT_OK)
        return fprintf(stderr, "tokenize_speed: %s\n", vkbert_last_error(NULL)), 1;
    double *wall = malloc(2 * (size_t)repeats * sizeof *wall);
    long tokens = 0;
    int code = wall ? time_passes(t, set, repeats, wall, wall + repeats, &tokens) : -1;
    if (!wall) fputs("tokenize_speed: out of memory\n", stderr);
    if (!code) {
        printf("{\"texts\": %zu, \"bytes\": %zu, \"tokens\": %ld", set->count, set->bytes, tokens);
        print_list("seconds", wall, repeats);
        print_list("cpu_seconds", wall + repeats, repeats);
        puts("}");
    }
    free(wall);
    vkbert_tokenizer_destroy(t);
    return code ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fputs("usage: tokenize_speed DIR TEXTS_FILE [repeats=5]\n", stderr);
        return 2;
    }
    int repeats = argc == 4 ? atoi(argv[3]) : 5;
    if (repeats < 1) return fputs("tokenize_speed: repeats must be 1 or more\n", stderr), 2;
    text_set set = {0};
    int code = read_texts(argv[2], &set) ? 1 : run(argv[1], &set, repeats);
    free(set.texts);
    free(set.data);
    return code;
}
