/* The tests' temporary folders: each made fresh under /tmp and removed with everything in it,
 * so that no test sees another's files and none is left behind. */
#ifndef VKBERT_TEST_DIR_H
#define VKBERT_TEST_DIR_H

#include <stddef.h>

#define TEST_DIR_SIZE 64 /* the bytes of a folder's path, its NUL included */

/* Makes /tmp/vkbert_<what>_XXXXXX with mkdtemp; its path into dir (TEST_DIR_SIZE bytes). Fails
 * the test if it cannot. */
void test_dir_make(char *dir, const char *what);
/* Removes dir and everything under it; quietly does nothing if it is gone. */
void test_dir_remove(const char *dir);

/* One folder for a whole suite (Criterion's .init and .fini), and the path of a file in it
 * (256 bytes). */
extern char test_tmpdir[TEST_DIR_SIZE];
void test_tmpdir_setup(void);
void test_tmpdir_teardown(void);
void test_tmp_path(char *out, const char *name);

#endif
