/* bandwidth_probe: read bandwidth of a buffer much larger than the last-level cache.
 *
 * usage: bandwidth_probe <buffer MiB> <threads> <repetitions>
 *
 * The buffer is written once (every page touched by the thread that will read it), then each
 * repetition has every thread read its own slice once, summing 64-bit words in four
 * independent accumulators (loads, not arithmetic, are the limit); the repetition's time runs
 * from the start of the first thread to the end of the last. One JSON line per repetition:
 *   {"rep": 0, "bytes": 268435456, "seconds": 0.0213, "gb_per_s": 12.6, "checksum": 123}
 * (GB = 1e9 bytes). The checksum keeps the compiler from dropping the reads. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
  uint64_t *words;
  size_t count;
  uint64_t sum;
} slice_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *fill(void *arg) {
  slice_t *s = arg;
  for (size_t i = 0; i < s->count; i++) s->words[i] = i * 2654435761u;
  return NULL;
}

static void *read_slice(void *arg) {
  slice_t *s = arg;
  const uint64_t *p = s->words;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= s->count; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < s->count; i++) a += p[i];
  s->sum = a + b + c + d;
  return NULL;
}

static int run_threads(slice_t *slices, int threads, void *(*fn)(void *)) {
  pthread_t ids[256];
  for (int t = 0; t < threads; t++)
    if (pthread_create(&ids[t], NULL, fn, &slices[t]) != 0) return -1;
  for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <buffer MiB> <threads> <repetitions>\n", argv[0]);
    return 2;
  }
  long mib = atol(argv[1]), threads = atol(argv[2]), reps = atol(argv[3]);
  if (mib < 1 || threads < 1 || threads > 256 || reps < 1) {
    fprintf(stderr, "need buffer MiB >= 1, 1 <= threads <= 256, repetitions >= 1\n");
    return 2;
  }
  size_t count = (size_t)mib * 1024 * 1024 / sizeof(uint64_t);
  uint64_t *words = malloc(count * sizeof(uint64_t));
  if (!words) {
    fprintf(stderr, "cannot allocate %ld MiB\n", mib);
    return 1;
  }
  slice_t slices[256];
  size_t per = count / (size_t)threads;
  for (long t = 0; t < threads; t++) {
    slices[t].words = words + (size_t)t * per;
    slices[t].count = t == threads - 1 ? count - (size_t)t * per : per;
  }
  if (run_threads(slices, (int)threads, fill) != 0) {
    fprintf(stderr, "cannot start %ld threads\n", threads);
    return 1;
  }
  for (long r = 0; r < reps; r++) {
    double start = now_s();
    if (run_threads(slices, (int)threads, read_slice) != 0) return 1;
    double seconds = now_s() - start;
    uint64_t checksum = 0;
    for (long t = 0; t < threads; t++) checksum += slices[t].sum;
    double bytes = (double)count * sizeof(uint64_t);
    printf("{\"rep\": %ld, \"bytes\": %.0f, \"seconds\": %.9f, \"gb_per_s\": %.4f, "
           "\"checksum\": %llu}\n",
           r, bytes, seconds, bytes / seconds / 1e9, (unsigned long long)checksum);
    fflush(stdout);
  }
  free(words);
  return 0;
}
