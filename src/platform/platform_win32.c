/* The platform layer on Windows (Vista and later: SRW locks), built with MinGW-w64 or MSVC. File
 * names are the ANSI code page's, as fopen takes them. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <share.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The C library's errno for the Win32 error of the last call. */
static int errno_of_last_error(void)
{
    switch (GetLastError()) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_NAME:
        return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
        return EACCES;
    case ERROR_ALREADY_EXISTS:
    case ERROR_FILE_EXISTS:
        return EEXIST;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
        return ENOMEM;
    case ERROR_DIR_NOT_EMPTY:
        return ENOTEMPTY;
    case ERROR_FILENAME_EXCED_RANGE:
        return ENAMETOOLONG;
    default:
        return EIO;
    }
}

/* ---- locks ---- */

/* A slim reader/writer lock taken exclusively: not recursive, as plat_mutex promises (a
 * critical section would let the holder in again and hide a re-entry). */
struct plat_mutex {
    SRWLOCK lock;
};

plat_mutex *plat_mutex_new(void)
{
    plat_mutex *m = malloc(sizeof *m);
    if (m) InitializeSRWLock(&m->lock);
    return m;
}

void plat_mutex_free(plat_mutex *m)
{
    free(m); /* an SRW lock holds no resources */
}

void plat_mutex_lock(plat_mutex *m)
{
    AcquireSRWLockExclusive(&m->lock);
}

void plat_mutex_unlock(plat_mutex *m)
{
    ReleaseSRWLockExclusive(&m->lock);
}

static SRWLOCK process_lock = SRWLOCK_INIT;

void plat_process_lock(void)
{
    AcquireSRWLockExclusive(&process_lock);
}

void plat_process_unlock(void)
{
    ReleaseSRWLockExclusive(&process_lock);
}

/* ---- threads ---- */

struct plat_thread {
    HANDLE handle;
    void (*fn)(void *);
    void *arg;
};

static DWORD WINAPI thread_main(LPVOID t)
{
    plat_thread *self = t;
    self->fn(self->arg);
    return 0;
}

plat_thread *plat_thread_start(void (*fn)(void *), void *arg)
{
    plat_thread *t = malloc(sizeof *t);
    if (!t) return NULL;
    t->fn = fn;
    t->arg = arg;
    t->handle = CreateThread(NULL, 0, thread_main, t, 0, NULL);
    if (t->handle) return t;
    free(t);
    return NULL;
}

void plat_thread_join(plat_thread *t)
{
    if (!t) return;
    WaitForSingleObject(t->handle, INFINITE);
    CloseHandle(t->handle);
    free(t);
}

int plat_cpu_count(void)
{
    DWORD_PTR process, system;
    if (!GetProcessAffinityMask(GetCurrentProcess(), &process, &system) || !process) return 1;
    int n = 0;
    for (; process; process &= process - 1)
        n++;
    return n;
}

/* ---- time ---- */

double plat_now_ms(void)
{
    LARGE_INTEGER count, frequency; /* the frequency is fixed at boot */
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&frequency);
    return (double)count.QuadPart * 1e3 / (double)frequency.QuadPart;
}

/* ---- files ---- */

plat_file_kind plat_file_info(const char *path, uint64_t *size)
{
    WIN32_FILE_ATTRIBUTE_DATA a;
    if (!GetFileAttributesExA(path, GetFileExInfoStandard, &a)) {
        errno = errno_of_last_error();
        return PLAT_MISSING;
    }
    bool dir = a.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY;
    if (size) *size = dir ? 0 : ((uint64_t)a.nFileSizeHigh << 32) | a.nFileSizeLow;
    return dir                                          ? PLAT_DIRECTORY
           : a.dwFileAttributes & FILE_ATTRIBUTE_DEVICE ? PLAT_OTHER
                                                        : PLAT_REGULAR;
}

/* Opening does not wait on Windows; the type is checked by name first (a plain check: the
 * file could change between the two, which only gives a read error). */
FILE *plat_open_regular(const char *path, plat_file_kind *kind, uint64_t *size)
{
    *kind = plat_file_info(path, size);
    if (*kind != PLAT_REGULAR) {
        if (*kind != PLAT_MISSING) errno = *kind == PLAT_DIRECTORY ? EISDIR : EINVAL;
        return NULL;
    }
    return fopen(path, "rb");
}

/* The view holds the mapping and the file open: both handles can be closed once it exists. */
static const char *map_handle(HANDLE file, const void **data, size_t *size)
{
    LARGE_INTEGER length;
    if (GetFileType(file) != FILE_TYPE_DISK || !GetFileSizeEx(file, &length)) {
        errno = EINVAL;
        return "read";
    }
    if ((uint64_t)length.QuadPart > SIZE_MAX) {
        errno = EFBIG;
        return "map";
    }
    *size = (size_t)length.QuadPart;
    if (*size == 0) return NULL;
    HANDLE mapping = CreateFileMappingA(file, NULL, PAGE_READONLY, 0, 0, NULL);
    void *p = mapping ? MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0) : NULL;
    if (!p) errno = errno_of_last_error();
    if (mapping) CloseHandle(mapping);
    *data = p;
    return p ? NULL : "map";
}

const char *plat_map_file(const char *path, const void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    if (plat_file_info(path, NULL) == PLAT_DIRECTORY) {
        errno = EISDIR;
        return "read";
    }
    HANDLE file = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
                              FILE_ATTRIBUTE_NORMAL, NULL);
    if (file == INVALID_HANDLE_VALUE) {
        errno = errno_of_last_error();
        return "open";
    }
    const char *failed = map_handle(file, data, size);
    CloseHandle(file);
    if (failed) *size = 0;
    return failed;
}

void plat_unmap(const void *data, size_t size)
{
    (void)size;
    if (data) UnmapViewOfFile(data);
}

/* VirtualUnlock on pages that are not locked removes them from the working set (its
 * documentation says so, and that it then fails with ERROR_NOT_LOCKED, which is expected). */
void plat_release_pages(const void *data, size_t size)
{
    if (data && size) VirtualUnlock((void *)data, size);
}

/* Large pages on Windows need the SeLockMemoryPrivilege and memory of one's own: none here. */
void plat_advise_huge_pages(void *data, size_t size)
{
    (void)data;
    (void)size;
}

/* Windows has no modes: a directory under the user's profile is the user's already. */
int plat_mkdir(const char *path, bool private_to_user)
{
    (void)private_to_user;
    if (CreateDirectoryA(path, NULL)) return 0;
    int error = errno_of_last_error();
    return error == EEXIST ? 0 : error;
}

int plat_mkdirs(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return ENOMEM;
    memcpy(p, path, n + 1);
    int error = 0;
    /* Past a drive's "C:\": its root is never made. */
    char *s = p + (n >= 3 && p[1] == ':' ? 3 : 1);
    for (; s < p + n && !error; s++) {
        if (!strchr(PLAT_SEPARATORS, *s)) continue;
        char c = *s;
        *s = '\0';
        error = plat_mkdir(p, true);
        *s = c;
    }
    if (!error) error = plat_mkdir(p, true);
    free(p);
    return error;
}

int plat_remove_dir(const char *path)
{
    char pattern[MAX_PATH], file[MAX_PATH];
    int n = snprintf(pattern, sizeof pattern, "%s\\*", path);
    if (n < 0 || (size_t)n >= sizeof pattern) return ENAMETOOLONG;
    WIN32_FIND_DATAA found;
    HANDLE find = FindFirstFileA(pattern, &found);
    int error = 0;
    for (bool more = find != INVALID_HANDLE_VALUE; more; more = FindNextFileA(find, &found)) {
        if (found.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) continue; /* ".", ".." */
        n = snprintf(file, sizeof file, "%s\\%s", path, found.cFileName);
        if (n < 0 || (size_t)n >= sizeof file)
            error = ENAMETOOLONG;
        else if (!DeleteFileA(file) && !error)
            error = errno_of_last_error();
    }
    if (find != INVALID_HANDLE_VALUE) FindClose(find);
    if (!RemoveDirectoryA(path) && !error) error = errno_of_last_error();
    return error;
}

/* Replaces the trailing XXXXXX of `path` with a name not tried before in this process. */
static void next_name(char *path, unsigned attempt)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    static volatile LONG counter;
    uint64_t x = GetTickCount64() ^ ((uint64_t)GetCurrentProcessId() << 32) ^
                 ((uint64_t)InterlockedIncrement(&counter) << 20) ^ attempt;
    char *end = path + strlen(path);
    for (char *c = end - 6; c < end && c >= path; c++, x /= 36)
        *c = digits[x % 36];
}

bool plat_make_temp_dir(char *out, size_t size)
{
    char base[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof base, base);
    if (n == 0 || n > MAX_PATH) return false;
    int written = snprintf(out, size, "%svkbert_XXXXXX", base);
    if (written < 0 || (size_t)written >= size) return false;
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        next_name(out, attempt);
        if (CreateDirectoryA(out, NULL)) return true;
        if (GetLastError() != ERROR_ALREADY_EXISTS) return false;
    }
    return false;
}

FILE *plat_create_temp(char *path)
{
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        next_name(path, attempt);
        int fd = -1;
        errno_t error = _sopen_s(&fd, path, _O_CREAT | _O_EXCL | _O_WRONLY | _O_BINARY, _SH_DENYNO,
                                 _S_IREAD | _S_IWRITE);
        if (error == EEXIST) continue;
        if (error) {
            errno = error;
            return NULL;
        }
        FILE *f = _fdopen(fd, "wb");
        if (f) return f;
        int saved = errno;
        _close(fd);
        remove(path);
        errno = saved;
        return NULL;
    }
    errno = EEXIST;
    return NULL;
}

int plat_replace(const char *from, const char *to)
{
    /* rename() refuses an existing target on Windows; MoveFileEx replaces it in one step. */
    return MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING) ? 0 : errno_of_last_error();
}

bool plat_cache_home(char *out, size_t size)
{
    const char *local = getenv("LOCALAPPDATA");
    if (!local || !*local) return false;
    int n = snprintf(out, size, "%s", local);
    return n > 0 && (size_t)n < size;
}
