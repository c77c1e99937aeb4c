/* Checks of Prometheus' text exposition format 0.0.4 (prometheus.io, "Exposition formats":
 * metric and label names [a-zA-Z_:][a-zA-Z0-9_:]*, label values escaping backslash, double
 * quote and line feed, histograms as cumulative _bucket{le} series ending at +Inf). */
#include "prometheus_text.h"
#include "support.h"

#include <stdlib.h>
#include <string.h>

/* The value of the sample written exactly as `sample` (name and labels); fails if absent. */
double test_metric(const char *text, const char *sample)
{
    size_t n = strlen(sample);
    for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
        if (strncmp(line, sample, n) == 0 && line[n] == ' ') return strtod(line + n + 1, NULL);
        if (!strchr(line, '\n')) break;
    }
    cr_assert_fail("no sample %s in\n%s", sample, text);
    return 0;
}

static int is_name_char(char c, int first)
{
    return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (!first && c >= '0' && c <= '9');
}

/* The label set "{a="x",b="y"}" at *p, its escapes checked; returns the end. */
static const char *parse_labels(const char *p, const char *line)
{
    if (*p != '{') return p;
    p++;
    while (*p != '}') {
        cr_assert(is_name_char(*p, 1), "label name in: %s", line);
        while (is_name_char(*p, 0))
            p++;
        cr_assert(p[0] == '=' && p[1] == '"', "label in: %s", line);
        for (p += 2; *p != '"'; p++) {
            cr_assert(*p && *p != '\n', "unterminated label value in: %s", line);
            if (*p == '\\') {
                p++;
                cr_assert(*p == '\\' || *p == '"' || *p == 'n', "bad escape in: %s", line);
            }
        }
        p++;
        if (*p == ',')
            p++;
        else
            cr_assert_eq(*p, '}', "labels in: %s", line);
    }
    return p + 1;
}

typedef struct series {
    char key[256]; /* the histogram's name and labels without le */
    double last, inf;
    int ended;
} series;

/* The key of a _bucket sample: its base name and labels, le="..." cut out. */
static void bucket_key(const char *name, size_t name_len, const char *labels, size_t labels_len,
                       char *key, double *le)
{
    snprintf(key, 256, "%.*s", (int)(name_len - strlen("_bucket")), name);
    char rest[256];
    snprintf(rest, sizeof rest, "%.*s", (int)labels_len, labels);
    char *at = strstr(rest, "le=\"");
    cr_assert_not_null(at, "no le in %s", rest);
    char *end = strchr(at + 4, '"');
    *le = strncmp(at + 4, "+Inf", 4) == 0 ? INFINITY : strtod(at + 4, NULL);
    memmove(at, end + 1, strlen(end + 1) + 1);
    /* {a="x",le="1"} leaves {a="x",}; {le="1"} leaves {}. */
    size_t n = strlen(rest);
    if (n >= 2 && rest[n - 2] == ',') memmove(rest + n - 2, rest + n - 1, 2);
    if (strcmp(rest, "{}") != 0) strncat(key, rest, 255 - strlen(key));
}

/* A histogram's _bucket series: le increasing, counts cumulative, ending at +Inf. */
static void check_bucket(series *all, int *count, const char *key, double le, double value)
{
    series *s = *count ? &all[*count - 1] : NULL;
    if (!s || strcmp(s->key, key) != 0) {
        cr_assert(!s || s->ended, "series %s did not end at +Inf", s ? s->key : "");
        cr_assert_lt(*count, 64);
        s = &all[(*count)++];
        snprintf(s->key, sizeof s->key, "%s", key);
        s->last = -1;
    }
    cr_assert(!s->ended, "%s: a bucket after +Inf", key);
    cr_assert_geq(value, s->last, "%s: buckets not cumulative", key);
    s->last = value;
    if (isinf(le)) s->ended = 1, s->inf = value;
}

/* Every line a HELP or TYPE comment or `name{labels} value`; histograms cumulative, each
 * _count equal to its +Inf bucket. */
void test_check_exposition(const char *text)
{
    static series all[64];
    int series_count = 0;
    size_t size = strlen(text);
    cr_assert(size > 0 && text[size - 1] == '\n', "the text must end with a line feed");
    char line[512];
    for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
        snprintf(line, sizeof line, "%.*s", (int)(strchr(p, '\n') - p), p);
        if (line[0] == '#') {
            char name[128], type[32];
            int help = sscanf(line, "# HELP %127s", name) == 1;
            int typed = sscanf(line, "# TYPE %127s %31s", name, type) == 2;
            cr_assert(help || typed, "comment: %s", line);
            if (typed)
                cr_assert(strstr("counter gauge histogram summary untyped", type), "%s", line);
            continue;
        }
        const char *q = line;
        cr_assert(is_name_char(*q, 1), "sample: %s", line);
        while (is_name_char(*q, 0))
            q++;
        size_t name_len = (size_t)(q - line);
        const char *labels = q;
        q = parse_labels(q, line);
        cr_assert_eq(*q, ' ', "no value in: %s", line);
        char *end;
        double value = strtod(q + 1, &end);
        cr_assert(end != q + 1 && *end == 0, "value in: %s", line);
        if (name_len > 7 && strncmp(line + name_len - 7, "_bucket", 7) == 0) {
            char key[256];
            double le;
            bucket_key(line, name_len, labels, (size_t)(q - labels), key, &le);
            check_bucket(all, &series_count, key, le, value);
        } else if (name_len > 6 && strncmp(line + name_len - 6, "_count", 6) == 0) {
            char key[256];
            snprintf(key, sizeof key, "%.*s%.*s", (int)name_len - 6, line, (int)(q - labels),
                     labels);
            int found = 0;
            for (int i = 0; i < series_count; i++) {
                if (strcmp(all[i].key, key) != 0) continue;
                cr_assert_eq(all[i].inf, value, "%s: _count is not +Inf", key);
                found = 1;
            }
            cr_assert(found, "%s without buckets", key);
        }
    }
    cr_assert(series_count == 0 || all[series_count - 1].ended, "the last series is not ended");
}
