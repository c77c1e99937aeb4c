// The matmul epilogue, shared by the three matmul kernels: the bias, then an activation
// chosen by a specialization constant (id 7), so the BERT intermediate layer's GELU, the
// pooler's tanh and sentence-transformers' Dense activations (Tanh, ReLU, GELU, Sigmoid) cost
// no extra pass over memory, then the store to C in fp32 or fp16 (id 8).
// Include it after the push constants `p` and HAS_BIAS; it declares bindings 2 and 3.
#ifndef VKBERT_EPILOGUE_GLSL
#define VKBERT_EPILOGUE_GLSL
#include "half_io.glsl"

layout(constant_id = 7) const uint ACTIVATION = 0; // 0 none, 1 exact GELU, 2 tanh, 3 ReLU, 4 sigmoid
layout(constant_id = 8) const bool C_HALF = false; // C stored as fp16 (packed pairs)

layout(std430, binding = 2) readonly buffer BiasBuffer { vec4 bias[]; };
layout(std430, binding = 3) writeonly buffer CBuffer { vec4 c[]; };
layout(std430, binding = 3) writeonly buffer CHalfBuffer { uvec2 c_half[]; };

// erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7): GLSL has no erf.
float erf_approx(float x)
{
    float t = 1.0 / (1.0 + 0.3275911 * abs(x));
    float poly = t * (0.254829592 +
                      t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(x) * (1.0 - poly * exp(-x * x));
}

// GELU as BERT defines it: x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2))), not the tanh form.
vec4 activate(vec4 v)
{
    if (ACTIVATION == 1u) {
        const float inv_sqrt2 = 0.70710678118654752;
        vec4 e = vec4(erf_approx(v.x * inv_sqrt2), erf_approx(v.y * inv_sqrt2),
                      erf_approx(v.z * inv_sqrt2), erf_approx(v.w * inv_sqrt2));
        return 0.5 * v * (1.0 + e);
    }
    if (ACTIVATION == 2u) return tanh(v);
    if (ACTIVATION == 3u) return max(v, vec4(0.0));
    // exp of a large -v overflows to inf and gives 0, the limit, rather than NaN.
    if (ACTIVATION == 4u) return 1.0 / (1.0 + exp(-v));
    return v;
}

// C[z][row][col4] = activate(acc + bias).
void write_c(uint z, uint row, uint col4, vec4 acc)
{
    if (HAS_BIAS) acc += bias[z * p.batch_bias4 + col4];
    acc = activate(acc);
    uint at = z * p.batch_c4 + row * p.ldc4 + col4;
    if (C_HALF)
        c_half[at] = pack_half4(acc);
    else
        c[at] = acc;
}

#endif
