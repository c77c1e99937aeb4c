#define _XOPEN_SOURCE 700 /* mkdtemp, nftw */

#include "test_dir.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>

void test_dir_make(char *dir, const char *what)
{
    int n = snprintf(dir, TEST_DIR_SIZE, "/tmp/vkbert_%s_XXXXXX", what);
    cr_assert(n > 0 && n < TEST_DIR_SIZE, "a folder name too long: %s", what);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s failed", dir);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void test_dir_remove(const char *dir)
{
    /* Depth first, so that each folder is empty when its turn comes; links are not followed. */
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

char test_tmpdir[TEST_DIR_SIZE];

void test_tmpdir_setup(void)
{
    test_dir_make(test_tmpdir, "test");
}

void test_tmpdir_teardown(void)
{
    test_dir_remove(test_tmpdir);
}

void test_tmp_path(char *out, const char *name)
{
    snprintf(out, 256, "%s/%s", test_tmpdir, name);
}
