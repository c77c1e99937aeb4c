# aarch64 Linux with Debian's gcc-aarch64-linux-gnu, against arm64 packages installed through
# dpkg multiarch (.ci/cross.sh): their libraries and .pc files live under /usr/lib/aarch64-linux-gnu
# on the build machine itself, their headers in /usr/include.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config must see the arm64 .pc files and never the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Run what is built under qemu-user (ctest, try_run).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
