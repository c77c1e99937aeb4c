/* Shared by the harnesses: the fuzz input as a file, for parsers that only take a path. */
#ifndef VKBERT_FUZZ_UTIL_H
#define VKBERT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Printed when a harness cannot set itself up; run.sh fails on it, since a harness that
 * returns early on every input would otherwise pass while testing nothing. */
#define FUZZ_SETUP_FAILED "vkbert fuzz setup failed"

static inline void fuzz_setup_failed(const char *what)
{
    static int said;
    if (!said) fprintf(stderr, FUZZ_SETUP_FAILED ": %s\n", what);
    said = 1;
}

/* A memfd holds the input: no disk writes per run, and its /proc/self/fd path opens, reads,
 * stats and maps like a regular file. The path is NULL when the memfd cannot be made. */
typedef struct fuzz_file {
    int fd;
    char path[64];
} fuzz_file;

static inline int fuzz_file_open(fuzz_file *f)
{
    f->fd = memfd_create("vkbert_fuzz", MFD_CLOEXEC);
    if (f->fd < 0) return -1;
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    return 0;
}

/* Replaces the file's contents with data[0..size). */
static inline const char *fuzz_file_write(fuzz_file *f, const uint8_t *data, size_t size)
{
    if (f->fd < 0 || ftruncate(f->fd, 0) != 0) return NULL;
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(f->fd, data + done, size - done, (off_t)done);
        if (n <= 0) return NULL;
        done += (size_t)n;
    }
    return f->path;
}

/* The input as a file at a path, through one memfd per process; NULL (and the setup failure
 * said) when the memfd cannot be made or written. */
static inline const char *fuzz_input_path(const uint8_t *data, size_t size)
{
    static fuzz_file file = {.fd = -1};
    if (file.fd < 0 && fuzz_file_open(&file) != 0) {
        fuzz_setup_failed("memfd_create");
        return NULL;
    }
    const char *path = fuzz_file_write(&file, data, size);
    if (!path) fuzz_setup_failed("writing the memfd");
    return path;
}

/* A new folder vkbert_fuzz_<name>_XXXXXX in $TMPDIR (run.sh points it at a folder it removes)
 * or /tmp, its path into dir[size]; -1 when it cannot be made. */
static inline int fuzz_make_dir(char *dir, size_t size, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/vkbert_fuzz_%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    return mkdtemp(dir) ? 0 : -1;
}

/* Writes `text` to dir/name; -1 on failure. */
static inline int fuzz_write_text(const char *dir, const char *name, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Makes dir/name a link to the memfd: the link is resolved by the process that opens it, so
 * every run reads the current input. */
static inline int fuzz_link_input(const char *dir, const char *name, const fuzz_file *f)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
    return symlink(f->path, p);
}

static inline int fuzz_remove_entry(const char *path, const struct stat *st, int flag,
                                    struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes dir and everything under it, links themselves rather than what they point at. */
static inline void fuzz_remove_tree(const char *dir)
{
    if (dir[0]) nftw(dir, fuzz_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* data[0..size) as a NUL-terminated string (cut at its first NUL); NULL when out of memory. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
