/* libFuzzer harness for sentence-transformers folders (src/io/st_model.c, st_modules.c): a
 * folder as SentenceTransformer.save lays it out (Transformer at the root, 1_Pooling, 2_Dense
 * with a small model.safetensors, 3_Normalize), every file fixed and valid but one, which is
 * the input. Its first byte picks that file (modulo the count, in the order of `files`); the
 * rest is its content. A model that loads has its Dense weights and prompts read through, so
 * that a size the config gives and the tensor does not have shows as an overflow. */
#define _GNU_SOURCE /* memfd_create, mkdtemp, nftw */
#include "fuzz_util.h"
#include "io/safetensors.h"
#include "io/st_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
    const char *path, *text;
} files[] = {
    {"modules.json", "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", "
                     "\"type\": \"sentence_transformers.models.Transformer\"},\n"
                     " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", "
                     "\"type\": \"sentence_transformers.models.Pooling\"},\n"
                     " {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Dense\", "
                     "\"type\": \"sentence_transformers.models.Dense\"},\n"
                     " {\"idx\": 3, \"name\": \"3\", \"path\": \"3_Normalize\", "
                     "\"type\": \"sentence_transformers.models.Normalize\"}]\n"},
    {"1_Pooling/config.json",
     "{\"word_embedding_dimension\": 4, \"pooling_mode_cls_token\": false, "
     "\"pooling_mode_mean_tokens\": true, \"pooling_mode_max_tokens\": false, "
     "\"pooling_mode_mean_sqrt_len_tokens\": false, \"pooling_mode_weightedmean_tokens\": false, "
     "\"pooling_mode_lasttoken\": false, \"include_prompt\": true}\n"},
    {"2_Dense/config.json", "{\"in_features\": 4, \"out_features\": 3, \"bias\": true, "
                            "\"activation_function\": \"torch.nn.modules.activation.Tanh\", "
                            "\"module_input_name\": \"sentence_embedding\", "
                            "\"module_output_name\": \"sentence_embedding\"}\n"},
    {"sentence_bert_config.json", "{\"max_seq_length\": 128, \"do_lower_case\": false}\n"},
    {"config_sentence_transformers.json",
     "{\"__version__\": {\"sentence_transformers\": \"5.1.0\", \"transformers\": \"4.56.0\", "
     "\"pytorch\": \"2.5.1\"}, \"model_type\": \"SentenceTransformer\", "
     "\"prompts\": {\"query\": \"query: \", \"document\": \"\"}, "
     "\"default_prompt_name\": null, \"similarity_fn_name\": \"cosine\"}\n"},
};

#define N_FILES (sizeof files / sizeof files[0])

static char dirs[N_FILES][512];
static fuzz_file file = {.fd = -1};

static void remove_dirs(void)
{
    for (size_t i = 0; i < N_FILES; i++)
        fuzz_remove_tree(dirs[i]);
}

/* Dense's linear.weight [3][4] and linear.bias [3], as the config above gives them. */
static int write_dense_weights(const char *dir)
{
    static const float weight[12] = {0.5f, -0.25f, 0.125f, 1, -1, 0, 0.75f, 2, -0.5f, 0.25f, 3, -2};
    static const float bias[3] = {0.1f, -0.2f, 0.3f};
    const char *names[] = {"linear.weight", "linear.bias"};
    const st_dtype dtypes[] = {ST_F32, ST_F32};
    const int ndims[] = {2, 1};
    const int64_t wshape[] = {3, 4}, bshape[] = {3};
    const int64_t *const shapes[] = {wshape, bshape};
    const float *const values[] = {weight, bias};
    char path[600], err[256];
    snprintf(path, sizeof path, "%s/2_Dense/model.safetensors", dir);
    if (st_save(path, 2, names, dtypes, ndims, shapes, values, err, sizeof err) == 0) return 0;
    fprintf(stderr, "%s\n", err);
    return -1;
}

/* The whole folder in dir, with files[input] a link to the memfd. */
static int make_dir(char *dir, size_t input)
{
    static const char *const subdirs[] = {"1_Pooling", "2_Dense", "3_Normalize"};
    char p[600];
    if (fuzz_make_dir(dir, sizeof dirs[0], "st_model") != 0) return -1;
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, subdirs[i]);
        if (mkdir(p, 0777) != 0) return -1;
    }
    for (size_t i = 0; i < N_FILES; i++)
        if (i == input ? fuzz_link_input(dir, files[i].path, &file) != 0
                       : fuzz_write_text(dir, files[i].path, files[i].text) != 0)
            return -1;
    return write_dense_weights(dir);
}

static int setup(void)
{
    static int state; /* 0 not yet, 1 done, -1 failed */
    if (state) return state;
    state = -1;
    atexit(remove_dirs);
    if (fuzz_file_open(&file) != 0) return state;
    for (size_t i = 0; i < N_FILES; i++)
        if (make_dir(dirs[i], i) != 0) return state;
    state = 1;
    return state;
}

/* Reads every value the model owns; the sum is kept from the optimizer. */
static void use(const st_model *m)
{
    volatile float sum = (float)st_pool_width(m->pool_modes, m->word_embedding_dimension);
    for (int i = 0; i < m->dense_count; i++) {
        const st_dense *d = &m->dense[i];
        for (size_t j = 0; j < (size_t)d->out_features * (size_t)d->in_features; j++)
            sum += d->weight[j];
        for (int j = 0; d->bias && j < d->out_features; j++)
            sum += d->bias[j];
    }
    for (int i = 0; i < m->prompt_count; i++)
        sum += (float)(strlen(m->prompts[i].name) + strlen(m->prompts[i].text));
    if (m->default_prompt_name) sum += (float)strlen(m->default_prompt_name);
    if (m->transformer_dir) sum += (float)strlen(m->transformer_dir);
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup() < 0) {
        fuzz_setup_failed("creating the model folders in $TMPDIR or /tmp");
        return 0;
    }
    if (size < 1) return 0;
    if (!fuzz_file_write(&file, data + 1, size - 1)) {
        fuzz_setup_failed("writing the memfd");
        return 0;
    }
    st_model m;
    char err[512];
    if (st_model_load(dirs[data[0] % N_FILES], &m, err, sizeof err) != 0) return 0;
    use(&m);
    st_model_free(&m);
    return 0;
}
