/* safetensors files: an 8-byte little-endian header length, a JSON header (parsed with cJSON),
 * then the tensor data. Plain C, no Vulkan. */
#ifndef VKBERT_IO_SAFETENSORS_H
#define VKBERT_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef enum st_dtype { ST_F32, ST_F16, ST_BF16, ST_F64, ST_I64, ST_I32, ST_U8, ST_BOOL } st_dtype;

typedef struct st_tensor {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t count;     /* product of shape */
    const void *data; /* points into the file's buffer */
    size_t nbytes;
} st_tensor;

typedef struct st_file {
    const uint8_t *buffer; /* the whole file (NULL when empty) */
    size_t size;
    st_tensor *tensors;
    int count;
    int mapped; /* buffer is st_load's read-only mapping, which st_free unmaps */
} st_file;

/* Reads and checks the whole file: header length within the file, valid JSON, every entry
 * with a known dtype, a shape, and data_offsets inside the data area whose length matches the
 * shape. "__metadata__" is skipped. On failure returns -1, leaves *out zeroed and writes a
 * message naming the file and the problem. */
int st_load(const char *path, st_file *out, char *err, size_t err_size);
/* The same checks on a file already in memory (`name` stands for the path in messages). The
 * tensors point into `data`, which must outlive *out; st_free does not free it. */
int st_parse(const void *data, size_t size, const char *name, st_file *out, char *err,
             size_t err_size);
void st_free(st_file *file);

/* The tensor with this exact name, or NULL. */
const st_tensor *st_find(const st_file *file, const char *name);

/* Converts F32, F16, BF16 or F64 data to float32 into out[tensor->count]; -1 for other dtypes. */
int st_to_f32(const st_tensor *tensor, float *out);
/* The same for `count` elements of `dtype` at `data` (any alignment), e.g. some rows of one. */
int st_convert_f32(st_dtype dtype, const void *data, size_t count, float *out);

/* Writes a safetensors file of float32 or float16 tensors (for tests and tools).
 * dtypes[i] is ST_F32 or ST_F16; data[i] is float32 host data, converted when F16. */
int st_save(const char *path, int count, const char *const *names, const st_dtype *dtypes,
            const int *ndims, const int64_t *const *shapes, const float *const *data, char *err,
            size_t err_size);

const char *st_dtype_name(st_dtype dtype);

#endif
