/* Reading a test driver's input whole (tok_driver_input.h). */
#include "tok_driver_input.h"

#include <stdlib.h>

char *tok_driver_read_stream(FILE *f)
{
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            char *grown = realloc(s, cap * 2);
            if (!grown) free(s);
            s = grown;
            cap *= 2;
        }
    }
    if (s) s[n] = 0;
    return s;
}

char *tok_driver_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = tok_driver_read_stream(f);
    fclose(f);
    return s;
}
