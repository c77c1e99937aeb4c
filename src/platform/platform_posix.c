/* The platform layer on POSIX (2008, with XSI): Linux with glibc or musl, Android's bionic,
 * macOS. Nothing here is glibc's own. */
#define _XOPEN_SOURCE 700 /* mkdtemp under -std=c11 */
/* madvise and MADV_DONTNEED, which glibc and musl show with _DEFAULT_SOURCE and macOS with
 * _DARWIN_C_SOURCE; bionic always. */
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
#include "platform.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- locks ---- */

struct plat_mutex {
    pthread_mutex_t m;
};

plat_mutex *plat_mutex_new(void)
{
    plat_mutex *m = malloc(sizeof *m);
    if (m && !pthread_mutex_init(&m->m, NULL)) return m;
    free(m);
    return NULL;
}

void plat_mutex_free(plat_mutex *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->m);
    free(m);
}

void plat_mutex_lock(plat_mutex *m)
{
    pthread_mutex_lock(&m->m);
}

void plat_mutex_unlock(plat_mutex *m)
{
    pthread_mutex_unlock(&m->m);
}

static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;

void plat_process_lock(void)
{
    pthread_mutex_lock(&process_lock);
}

void plat_process_unlock(void)
{
    pthread_mutex_unlock(&process_lock);
}

/* ---- threads ---- */

struct plat_thread {
    pthread_t id;
    void (*fn)(void *);
    void *arg;
};

static void *thread_main(void *t)
{
    plat_thread *self = t;
    self->fn(self->arg);
    return NULL;
}

plat_thread *plat_thread_start(void (*fn)(void *), void *arg)
{
    plat_thread *t = malloc(sizeof *t);
    if (!t) return NULL;
    t->fn = fn;
    t->arg = arg;
    if (!pthread_create(&t->id, NULL, thread_main, t)) return t;
    free(t);
    return NULL;
}

void plat_thread_join(plat_thread *t)
{
    if (!t) return;
    pthread_join(t->id, NULL);
    free(t);
}

int plat_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

/* ---- time ---- */

double plat_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ---- files ---- */

static plat_file_kind kind_of(const struct stat *st)
{
    return S_ISREG(st->st_mode) ? PLAT_REGULAR : S_ISDIR(st->st_mode) ? PLAT_DIRECTORY : PLAT_OTHER;
}

plat_file_kind plat_file_info(const char *path, uint64_t *size)
{
    struct stat st;
    if (stat(path, &st)) return PLAT_MISSING;
    if (size) *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    return kind_of(&st);
}

/* Opens for reading without waiting: open(2) on a FIFO with no writer (or on some devices) would
 * block forever, so O_NONBLOCK, and the kind is checked on the descriptor, so that the file
 * read is the file checked. A descriptor of a regular file, blocking again; else -1 with errno
 * set (EISDIR, or EINVAL for anything else) and *kind saying what it was. */
static int open_regular(const char *path, struct stat *st, plat_file_kind *kind)
{
    *kind = PLAT_MISSING;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -1;
    int flags = -1;
    if (!fstat(fd, st)) *kind = kind_of(st);
    if (*kind == PLAT_REGULAR) flags = fcntl(fd, F_GETFL);
    if (flags != -1 && !fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) return fd;
    int saved = *kind == PLAT_DIRECTORY ? EISDIR : *kind == PLAT_OTHER ? EINVAL : errno;
    close(fd);
    errno = saved;
    return -1;
}

FILE *plat_open_regular(const char *path, plat_file_kind *kind, uint64_t *size)
{
    struct stat st;
    int fd = open_regular(path, &st, kind);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (f) *size = (uint64_t)st.st_size;
    if (fd >= 0 && !f) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return f;
}

static const char *map_fd(int fd, const struct stat *st, const void **data, size_t *size)
{
    if ((uint64_t)st->st_size > SIZE_MAX) {
        errno = EFBIG;
        return "map";
    }
    *size = (size_t)st->st_size;
    if (*size == 0) return NULL;
    void *p = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return "map";
    *data = p;
    return NULL;
}

const char *plat_map_file(const char *path, const void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    struct stat st;
    plat_file_kind kind;
    int fd = open_regular(path, &st, &kind);
    if (fd < 0) return kind == PLAT_MISSING ? "open" : "read";
    const char *failed = map_fd(fd, &st, data, size);
    int saved = errno;
    close(fd);
    errno = saved;
    if (failed) *size = 0;
    return failed;
}

void plat_unmap(const void *data, size_t size)
{
    if (data) munmap((void *)data, size);
}

/* madvise, not posix_madvise: glibc's posix_madvise ignores POSIX_MADV_DONTNEED. On a private
 * read-only file mapping MADV_DONTNEED unmaps the pages, and a later read maps the file's again
 * (madvise(2)). Rounded out to whole pages: the neighbours' are read back just as well. */
void plat_release_pages(const void *data, size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!data || !size || page <= 0) return;
    uintptr_t begin = (uintptr_t)data / (uintptr_t)page * (uintptr_t)page;
    uintptr_t end = (uintptr_t)data + size;
    madvise((void *)begin, end - begin, MADV_DONTNEED);
}

void plat_advise_huge_pages(void *data, size_t size)
{
#ifdef MADV_HUGEPAGE
    long page = sysconf(_SC_PAGESIZE);
    if (!data || !size || page <= 0) return;
    /* Whole pages inside the range only: the advice must not reach memory of others. */
    uintptr_t begin = ((uintptr_t)data + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page;
    uintptr_t end = ((uintptr_t)data + size) / (uintptr_t)page * (uintptr_t)page;
    if (end > begin) madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
    (void)data;
    (void)size;
#endif
}

int plat_mkdir(const char *path, bool private_to_user)
{
    return !mkdir(path, private_to_user ? 0700 : 0777) || errno == EEXIST ? 0 : errno;
}

int plat_mkdirs(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return ENOMEM;
    memcpy(p, path, n + 1);
    int error = 0;
    for (char *s = p + 1; *s && !error; s++) {
        if (*s != '/') continue;
        *s = '\0';
        error = plat_mkdir(p, true);
        *s = '/';
    }
    if (!error) error = plat_mkdir(p, true);
    free(p);
    return error;
}

int plat_remove_dir(const char *path)
{
    DIR *dir = opendir(path);
    if (!dir) return errno;
    int error = 0;
    char file[4096];
    for (struct dirent *e; (e = readdir(dir));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int n = snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (n < 0 || (size_t)n >= sizeof file)
            error = ENAMETOOLONG;
        else if (unlink(file) && !error)
            error = errno;
    }
    closedir(dir);
    if (rmdir(path) && !error) error = errno;
    return error;
}

bool plat_make_temp_dir(char *out, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/') tmp = "/tmp";
    int n = snprintf(out, size, "%s/vkbert_XXXXXX", tmp);
    return n > 0 && (size_t)n < size && mkdtemp(out); /* mode 0700 */
}

FILE *plat_create_temp(char *path)
{
    int fd = mkstemp(path); /* mode 0600 */
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "wb");
    if (f) return f;
    int saved = errno;
    close(fd);
    unlink(path);
    errno = saved;
    return NULL;
}

int plat_replace(const char *from, const char *to)
{
    return rename(from, to) ? errno : 0; /* POSIX: atomic, replacing `to` */
}

bool plat_cache_home(char *out, size_t size)
{
    /* The XDG Base Directory spec: a relative XDG_CACHE_HOME is invalid and to be ignored. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n = xdg && xdg[0] == '/' ? snprintf(out, size, "%s", xdg)
            : home && *home      ? snprintf(out, size, "%s/.cache", home)
                                 : -1;
    return n > 0 && (size_t)n < size;
}
