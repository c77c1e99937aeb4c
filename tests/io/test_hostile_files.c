/* Model folders whose files are not what a loader can read whole: a FIFO (which would block an
 * open forever), a device, a huge file. Each load must fail at once with a message naming the
 * file; the suite's timeout turns a hang into a failure. */
#include "st_folder.h"
#include "support.h"
#include "io/bert_model.h"
#include "io/json_file.h"
#include "io/tokenizer.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(hostile_files, .init = test_tmpdir_setup, .fini = test_tmpdir_teardown, .timeout = 30);

static const char *const vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"};
#define VOCAB_COUNT ((int)(sizeof vocab / sizeof vocab[0]))

/* A BERT folder in test_tmpdir: config.json, model.safetensors, vocab.txt and, with `json`,
 * tokenizer.json. */
static void write_folder(int json)
{
    bert_config c = tiny_bert_small(VOCAB_COUNT, 0);
    tiny_bert_folder(test_tmpdir, &c, 7, vocab, VOCAB_COUNT, NULL);
    if (json)
        st_folder_write_tokenizer_json(test_tmpdir, vocab, VOCAB_COUNT, "WordPiece", NULL, NULL,
                                       NULL);
}

/* Loads the folder as the CLI does: the weights, then the tokenizer. */
static int load_folder(char *err, size_t size)
{
    bert_model m;
    tokenizer *t = NULL;
    if (bert_model_load(test_tmpdir, &m, err, size) != 0) return -1;
    bert_model_free(&m);
    int rc = tok_load_dir(test_tmpdir, &t, err, size);
    tok_free(t);
    return rc;
}

static void expect_refused(const char *name, const char *needle)
{
    char err[512] = "";
    cr_assert_eq(load_folder(err, sizeof err), -1, "%s was read", name);
    cr_assert(strstr(err, name) && strstr(err, needle), "%s: %s", name, err);
}

/* Replaces `name` in the folder by a FIFO with no writer. */
static void make_fifo(const char *name)
{
    char p[256];
    test_tmp_path(p, name);
    cr_assert_eq(unlink(p), 0, "%s", p);
    cr_assert_eq(mkfifo(p, 0600), 0, "%s", p);
}

Test(hostile_files, fifo_refused)
{
    const char *const names[] = {"config.json", "model.safetensors", "vocab.txt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        write_folder(0);
        make_fifo(names[i]);
        expect_refused(names[i], "not a regular file");
        char p[256];
        test_tmp_path(p, names[i]);
        unlink(p);
    }
    write_folder(1);
    make_fifo("tokenizer.json");
    expect_refused("tokenizer.json", "not a regular file");
}

/* A link to a regular file is read through; one to a device is refused like the device. */
Test(hostile_files, symlinks)
{
    char err[512] = "", p[256], target[256];
    write_folder(1);
    test_tmp_path(p, "config.json");
    test_tmp_path(target, "real_config.json");
    cr_assert_eq(rename(p, target), 0);
    cr_assert_eq(symlink(target, p), 0);
    cr_assert_eq(load_folder(err, sizeof err), 0, "%s", err);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(symlink("/dev/zero", p), 0);
    expect_refused("config.json", "not a regular file");
}

/* `name` made a sparse file of `bytes`: huge, without the disk space. */
static void make_huge(const char *name, size_t bytes)
{
    char p[256];
    test_tmp_path(p, name);
    cr_assert_eq(truncate(p, (off_t)bytes), 0, "%s", p);
}

Test(hostile_files, over_the_caps)
{
    const struct {
        const char *name;
        size_t cap;
        int json;
        const char *says;
    } cases[] = {
        {"config.json", IO_CAP_JSON, 0, "4 MiB"},
        {"vocab.txt", IO_CAP_VOCAB, 0, "16 MiB"},
        {"tokenizer.json", IO_CAP_TOKENIZER, 1, "64 MiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_folder(cases[i].json);
        make_huge(cases[i].name, cases[i].cap + 1);
        expect_refused(cases[i].name, cases[i].says);
    }
}
