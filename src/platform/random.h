/* One seeded generator for every deterministic stream of the project (random weights, the
 * bench's texts, the tests' data): the same numbers on every platform, unlike libc's rand(). */
#ifndef VKBERT_PLATFORM_RANDOM_H
#define VKBERT_PLATFORM_RANDOM_H

#include <stdint.h>

/* splitmix64 (Steele, Lea, Flood 2014): advances *state and returns the next 64 bits. */
uint64_t vkb_random_next(uint64_t *state);

#endif
