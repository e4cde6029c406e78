/* LD_PRELOAD shim for bench/slow_disk.py: every fsync/fdatasync of the process takes
 * SLOW_FSYNC_US microseconds longer (default 4000), like a disk whose flush costs ~4 ms.
 * Build: gcc -shared -fPIC -O2 -o slow_fsync.so slow_fsync.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static void wait_like_a_slow_disk(void) {
    const char *us = getenv("SLOW_FSYNC_US");
    usleep(us ? (useconds_t)atoi(us) : 4000);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    wait_like_a_slow_disk();
    return real(fd);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    wait_like_a_slow_disk();
    return real(fd);
}
