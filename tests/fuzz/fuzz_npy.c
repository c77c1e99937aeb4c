/* libFuzzer harness for the .npy reader (tools/vkbert/npy.c): any bytes as a file, then, when it
 * loads, the conversion to float32 of every element. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_path(data, size);
    if (!path) return 0;
    npy_array a;
    char err[256];
    if (npy_load(path, &a, err, sizeof err) != 0) return 0;
    /* The loader promises count * item_size bytes: ASan checks that reading them all is safe. */
    float *f = malloc((a.count ? a.count : 1) * sizeof *f);
    if (f) npy_to_f32(&a, f);
    free(f);
    npy_free(&a);
    return 0;
}
