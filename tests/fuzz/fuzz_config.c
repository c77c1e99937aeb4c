/* libFuzzer harness for config.json (src/io/bert_model.c) and tokenizer_config.json
 * (src/io/tokenizer.c): the input is the config of a model folder whose model.safetensors is
 * a fixed tiny model, so that a config that parses goes on to size, allocate and check the
 * weights against it. Two folders: F32 tensors with plain names, and F16 under "bert.". */
#define _GNU_SOURCE /* memfd_create, mkdtemp, nftw */
#include "fuzz_util.h"
#include "io/bert_model.h"
#include "tiny_model.h"
#include "io/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dirs[2][512];
static fuzz_file file = {.fd = -1};

static void remove_dirs(void)
{
    for (int i = 0; i < 2; i++)
        fuzz_remove_tree(dirs[i]);
}

/* Saves the tiny model in dir, then makes its config.json a link to the memfd. */
static int make_dir(char *dir, int f16, const char *prefix, const bert_weights *w)
{
    char err[256];
    if (fuzz_make_dir(dir, sizeof dirs[0], "config") != 0) return -1;
    if (bert_model_save(dir, &tiny, w, f16, prefix, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return fuzz_link_input(dir, "config.json", &file);
}

static int setup(void)
{
    static int state; /* 0 not yet, 1 done, -1 failed */
    if (state) return state;
    bert_weights w;
    state = -1;
    atexit(remove_dirs);
    if (fuzz_file_open(&file) != 0 || bert_weights_random(&tiny, 1, &w) != 0) return state;
    if (make_dir(dirs[0], 0, NULL, &w) == 0 && make_dir(dirs[1], 1, "bert.", &w) == 0) state = 1;
    bert_weights_free(&w);
    return state;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (setup() < 0) {
        fuzz_setup_failed("creating the model folders in $TMPDIR or /tmp");
        return 0;
    }
    const char *path = fuzz_file_write(&file, data, size);
    if (!path) {
        fuzz_setup_failed("writing the memfd");
        return 0;
    }
    bert_model m;
    char err[512];
    if (bert_model_load(dirs[size & 1], &m, err, sizeof err) == 0) bert_model_free(&m);
    int lower = 1;
    (void)tok_load_config(path, &lower);
    return 0;
}
