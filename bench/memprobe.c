/* bench/memprobe.c - how long this machine takes, now, to reach memory: a dependent walk through
 * a random cycle of 512 KiB (the second-level cache), 4 MiB (the shared third level, when the
 * machine's other tenants leave it to us) and 64 MiB (main memory), in ns per step, and a loop
 * of multiplications that touches no memory (the CPU's own speed). On a shared virtual machine
 * the 4 MiB walk moves from the third level's latency to main memory's when other tenants use
 * the cache, while the multiplications do not move: hiera batch's time follows the walk (see
 * bench/README.md, "the late session").
 *   cc -O2 -o /tmp/memprobe bench/memprobe.c && /tmp/memprobe [rounds] */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* a single random cycle through n slots (Sattolo's shuffle) */
static size_t *cycle(size_t n)
{
    size_t *a = malloc(n * sizeof *a);
    if (!a) {
        perror("memprobe");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        a[i] = i;
    uint64_t r = 88172645463325252ull;
    for (size_t i = n - 1; i > 0; i--) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        size_t j = (size_t)(r % i), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
    return a;
}

static double walk_ns(const size_t *a, long steps)
{
    size_t j = 0;
    double t = now();
    for (long i = 0; i < steps; i++)
        j = a[j];
    double d = now() - t;
    volatile size_t sink = j;
    (void)sink;
    return d / (double)steps * 1e9;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    size_t sizes[] = {512u << 10, 4u << 20, 64u << 20};
    size_t *walks[3];
    for (int k = 0; k < 3; k++)
        walks[k] = cycle(sizes[k] / sizeof(size_t));
    for (int r = 0; r < rounds; r++) {
        volatile uint64_t x = 1;
        double t = now();
        for (long i = 0; i < 50000000; i++)
            x = x * 6364136223846793005ull + 1;
        double alu = (now() - t) / 50000000 * 1e9;
        printf("multiply %.2f ns | walk 512 KiB %.1f ns, 4 MiB %.1f ns, 64 MiB %.1f ns\n", alu,
               walk_ns(walks[0], 4000000), walk_ns(walks[1], 4000000), walk_ns(walks[2], 2000000));
    }
    for (int k = 0; k < 3; k++)
        free(walks[k]);
    return 0;
}
