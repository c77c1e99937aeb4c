/* NumPy .npy files: read any of the dtypes the tool takes, write float32. The tool's own: the
 * library reads no .npy. */
#ifndef VKBERT_TOOL_NPY_H
#define VKBERT_TOOL_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_DIMS 8

typedef enum npy_dtype {
    NPY_FLOAT32, /* '<f4' */
    NPY_FLOAT16, /* '<f2' */
    NPY_FLOAT64, /* '<f8' */
    NPY_BOOL,    /* '|b1' */
    NPY_UINT8,   /* '|u1' */
    NPY_INT32,   /* '<i4' */
    NPY_INT64,   /* '<i8' */
} npy_dtype;

typedef struct npy_array {
    npy_dtype dtype;
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    size_t count;     /* product of shape (1 for a 0-d array) */
    size_t item_size; /* bytes per element */
    void *data;       /* count * item_size bytes, little-endian, C order; owned */
} npy_array;

/* Reads `path`. On failure returns -1, leaves *out zeroed and writes a message that names the
 * file and the problem (bad magic, truncated header, unsupported dtype, big-endian, Fortran
 * order, data shorter than the shape needs...) into err. Returns 0 on success. */
int npy_load(const char *path, npy_array *out, char *err, size_t err_size);
void npy_free(npy_array *array);

/* Writes a float32 array ('<f4', C order, format version 1.0). */
int npy_save_f32(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
                 size_t err_size);

/* Converts any numeric array to float32 (bool/ints to 0/1/values). `out` holds array->count. */
void npy_to_f32(const npy_array *array, float *out);

const char *npy_dtype_name(npy_dtype dtype);

/* What the last failure on this thread was. */
typedef enum npy_failure {
    NPY_MALFORMED,  /* the file was read and is not an .npy file vkbert takes */
    NPY_UNREADABLE, /* missing, or not a regular file */
    NPY_NO_MEMORY,  /* a host allocation failed */
} npy_failure;
npy_failure npy_last_failure(void);

#endif
