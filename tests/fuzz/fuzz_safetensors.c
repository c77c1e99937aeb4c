/* libFuzzer harness for the safetensors reader (src/io/safetensors.c): any bytes, parsed in
 * memory (so that ASan sees the exact end of the buffer, which a page-sized mapping hides)
 * and through st_load's mapping; then every tensor is looked up and converted. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void convert_all(const st_file *f)
{
    for (int i = 0; i < f->count; i++) {
        const st_tensor *t = &f->tensors[i];
        (void)st_find(f, t->name);
        float *out = malloc((t->count ? t->count : 1) * sizeof *out);
        if (out) (void)st_to_f32(t, out);
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    st_file f;
    if (st_parse(data, size, "fuzz", &f, err, sizeof err) == 0) {
        convert_all(&f);
        st_free(&f);
    }
    const char *path = fuzz_input_path(data, size);
    if (!path) return 0;
    if (st_load(path, &f, err, sizeof err) == 0) st_free(&f);
    return 0;
}
