/* IEEE 754 binary16 and bfloat16 <-> float32, round to nearest even. */
#ifndef VKBERT_IO_HALF_H
#define VKBERT_IO_HALF_H

#include <stdint.h>

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);

#endif
