/* The mixed-length texts of `vkbert bench`'s encoder-minilm-mixed-* cases: the same lengths on
 * every run and machine, from a seeded log-normal drawn with a PRNG of our own (libc's rand()
 * differs between platforms). */
#ifndef VKBERT_BENCH_MIXED_H
#define VKBERT_BENCH_MIXED_H

#define BENCH_MIXED_TEXTS 256
#define BENCH_MIXED_BATCH 32
#define BENCH_MIXED_MEDIAN 32
#define BENCH_MIXED_MIN 4
#define BENCH_MIXED_MAX 256

/* lengths[count]: log-normal with median BENCH_MIXED_MEDIAN, clipped to
 * [BENCH_MIXED_MIN, BENCH_MIXED_MAX], in arrival order. */
void bench_mixed_lengths(int *lengths, int count);
/* Longest first, as sentence-transformers' encode() orders its batches (stable). */
void bench_mixed_sort(int *lengths, int count);
/* The sum of the lengths: the real tokens. */
long bench_mixed_tokens(const int *lengths, int count);

#endif
