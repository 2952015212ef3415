/* bench/osprobe.c - what this machine's kernel charges a short process: a page fault on fresh
 * anonymous memory, the same pages mapped at once (MAP_POPULATE), a fault on a file's pages
 * already in the page cache (the text of a binary: each fault maps up to 16 pages around it), a
 * cheap system call (getppid) and a stat(). A one-shot `hiera lookup` is ~100 page faults and
 * ~190 system calls against /bin/true's ~47 and ~30: on a virtual machine whose faults cost
 * ten times a bare machine's, these and not the instructions decide the ratio to /bin/true
 * (bench/README.md, "one-shot: what a process costs here").
 *   cc -O2 -o /tmp/osprobe bench/osprobe.c && /tmp/osprobe [FILE-TO-MAP]
 * FILE defaults to /proc/self/exe's target (this program is small: give build/hiera). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* microseconds per page: n fresh anonymous pages touched one by one (populate: mapped at once) */
static double anon(size_t n, int populate)
{
    double t0 = now();
    char *p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    for (size_t i = 0; i < n; i++)
        p[i * 4096] = 1;
    double t = now() - t0;
    munmap(p, n * 4096);
    return t * 1e6 / (double)n;
}

/* microseconds per fault on a cached file's pages, one read every 64 KiB (the fault-around) */
static double filefault(const char *path, size_t *faults)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        die(path);
    size_t len = (size_t)st.st_size & ~(size_t)4095;
    if (len < 65536)
        len = 65536;
    volatile char *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        die("mmap");
    volatile char *warm = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0); /* in the page cache */
    (void)warm;
    double t0 = now();
    long s = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i += 65536, n++)
        s += p[i];
    double t = now() - t0;
    munmap((void *)p, len);
    munmap((void *)warm, len);
    close(fd);
    *faults = n;
    return s == -1 ? 0 : t * 1e6 / (double)n;
}

int main(int argc, char **argv)
{
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sl > 0 ? sl : 0] = 0;
    const char *file = argc > 1 ? argv[1] : self;
    double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9};
    size_t faults = 0;
    for (int round = 0; round < 7; round++) {
        double v[5];
        v[0] = anon(256, 0);
        v[1] = anon(256, 1);
        v[2] = filefault(file, &faults);
        double t0 = now();
        for (int i = 0; i < 2000; i++)
            (void)getppid();
        v[3] = (now() - t0) * 1e6 / 2000;
        struct stat st;
        t0 = now();
        for (int i = 0; i < 2000; i++)
            (void)stat(file, &st);
        v[4] = (now() - t0) * 1e6 / 2000;
        for (int k = 0; k < 5; k++)
            if (v[k] < best[k])
                best[k] = v[k];
    }
    printf("anonymous page fault      %7.2f us a page (256 pages)\n", best[0]);
    printf("anonymous, MAP_POPULATE   %7.2f us a page\n", best[1]);
    printf("file page fault (cached)  %7.2f us a fault (%zu faults over %s)\n", best[2], faults, file);
    printf("getppid()                 %7.2f us\n", best[3]);
    printf("stat()                    %7.2f us\n", best[4]);
    return 0;
}
