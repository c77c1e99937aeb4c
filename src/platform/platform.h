/* The platform layer: what POSIX systems (Linux, Android, macOS) and Windows give differently.
 * platform_posix.c and platform_win32.c implement it; CMake builds the one for the target. It
 * knows nothing else of vkbert, and everything above it is plain C11. Internal to the library
 * and the tool. */
#ifndef VKBERT_PLATFORM_H
#define VKBERT_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* printf-style format checking where the compiler has it. MinGW's printf archetype is
 * Microsoft's unless its own C99 printf is in use (__USE_MINGW_ANSI_STDIO, set by CMake), and
 * _mingw.h names the matching one. */
#if defined(__MINGW32__)
#define PLAT_PRINTF(f, a) __attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#elif defined(__GNUC__)
#define PLAT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PLAT_PRINTF(f, a)
#endif

/* The Vulkan loader volk opens, and where a user gets a driver, for messages. */
#if defined(_WIN32)
#define PLAT_VULKAN_LOADER "vulkan-1.dll"
#define PLAT_DRIVER_HINT "your GPU vendor's driver"
#define PLAT_SEPARATORS "/\\"
#elif defined(__APPLE__)
#define PLAT_VULKAN_LOADER "libvulkan.dylib"
#define PLAT_DRIVER_HINT "MoltenVK, with the Vulkan loader"
#define PLAT_SEPARATORS "/"
#else
#define PLAT_VULKAN_LOADER "libvulkan.so.1"
#define PLAT_DRIVER_HINT "mesa-vulkan-drivers for the CPU device lavapipe"
#define PLAT_SEPARATORS "/"
#endif

/* ---- locks ---- */

/* A plain mutex, not recursive: the library never calls its own public API, so no thread
 * takes a context's lock twice (a second take deadlocks). */
typedef struct plat_mutex plat_mutex;
plat_mutex *plat_mutex_new(void); /* NULL when out of memory */
void plat_mutex_free(plat_mutex *m);
void plat_mutex_lock(plat_mutex *m);
void plat_mutex_unlock(plat_mutex *m);
/* One lock for the whole process, usable before anything is set up: for state made on first
 * use (the Vulkan loader). Not recursive. */
void plat_process_lock(void);
void plat_process_unlock(void);

/* ---- threads ---- */

/* A thread running fn(arg); NULL when none could be started (the caller then does the work
 * itself). plat_thread_join waits for it to return and frees it. */
typedef struct plat_thread plat_thread;
plat_thread *plat_thread_start(void (*fn)(void *), void *arg);
void plat_thread_join(plat_thread *t);
/* Processors this process may run on, at least 1 (1 when the system does not say). */
int plat_cpu_count(void);

/* ---- time ---- */

double plat_now_ms(void); /* a monotonic clock, in milliseconds from an arbitrary start */

/* ---- files ---- */

typedef enum plat_file_kind {
    PLAT_MISSING, /* or not examinable: errno says why */
    PLAT_REGULAR,
    PLAT_DIRECTORY,
    PLAT_OTHER,
} plat_file_kind;
/* What `path` names; `size` (may be NULL) gets a regular file's size. */
plat_file_kind plat_file_info(const char *path, uint64_t *size);

/* Opens a file for binary reading, without waiting on a FIFO or device with no writer. Only a
 * regular file (a link to one included) is opened: else NULL, *kind says what `path` is and
 * errno why (EISDIR for a directory, EINVAL for another kind). `size` gets the file's size. */
FILE *plat_open_regular(const char *path, plat_file_kind *kind, uint64_t *size);
/* Maps a whole regular file read-only (an empty one gives NULL and 0). NULL on success, else
 * the step that failed, "open", "read" (not a regular file, as plat_open_regular says) or
 * "map", with errno set. */
const char *plat_map_file(const char *path, const void **data, size_t *size);
void plat_unmap(const void *data, size_t size);
/* Drops the pages of data[size], within a mapping of plat_map_file, from the process's resident
 * set: they stay valid and are read again from the file (the page cache) if touched. For weights
 * already uploaded, so that a model is not held twice in host memory while it loads. */
void plat_release_pages(const void *data, size_t size);
/* Asks for huge pages under data[size], anonymous memory about to be filled: one page fault per
 * 2 MiB instead of per 4 KiB, where the system does that on request (Linux's transparent huge
 * pages in "madvise" mode). A hint only; nothing where there is no such thing. */
void plat_advise_huge_pages(void *data, size_t size);

/* Makes one directory (0700 when `private_to_user`, else 0777 less the umask, where the system
 * has modes); 0 when made or already there, else an errno value. */
int plat_mkdir(const char *path, bool private_to_user);
/* mkdir -p, each directory made private to the user: 0 or an errno value. */
int plat_mkdirs(const char *path);
/* Removes a directory and the files directly in it: 0 or an errno value. */
int plat_remove_dir(const char *path);
/* A new private directory in the system's temporary directory; false on failure. */
bool plat_make_temp_dir(char *out, size_t size);

/* A new file, readable by the user only, named by replacing the trailing XXXXXX of `path` (in
 * place); open for binary writing. NULL with errno set on failure. */
FILE *plat_create_temp(char *path);
/* Renames `from` to `to`, replacing `to` atomically where the system can: 0 or an errno. */
int plat_replace(const char *from, const char *to);

/* Where per-user caches go: $XDG_CACHE_HOME (when absolute) or $HOME/.cache on POSIX,
 * %LOCALAPPDATA% on Windows. False when there is none or it does not fit. */
bool plat_cache_home(char *out, size_t size);

#endif
