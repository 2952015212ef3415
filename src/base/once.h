/* once.h - a function run once in a process, as pthread_once does, without its system call:
 * glibc's pthread_once ends every first run with a futex wake whether or not a thread waits
 * (three of a one-shot lookup's system calls). Here the first caller runs it under a mutex
 * (locked and unlocked without a system call when no other thread contends), later callers see
 * the flag (an acquire load) and return. */
#ifndef HIERA_ONCE_H
#define HIERA_ONCE_H

#include <pthread.h>
#include <stdatomic.h>

typedef struct {
    atomic_int done;
    pthread_mutex_t lock;
} hiera_once;

#define HIERA_ONCE_INIT {0, PTHREAD_MUTEX_INITIALIZER}

static inline void hiera_once_run(hiera_once *o, void (*fn)(void))
{
    if (atomic_load_explicit(&o->done, memory_order_acquire))
        return;
    pthread_mutex_lock(&o->lock);
    if (!atomic_load_explicit(&o->done, memory_order_relaxed)) {
        fn();
        atomic_store_explicit(&o->done, 1, memory_order_release);
    }
    pthread_mutex_unlock(&o->lock);
}

#endif
