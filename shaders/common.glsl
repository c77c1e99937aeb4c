// Helpers shared by the shaders. Include it after the local_size layout: functions here read
// gl_WorkGroupSize, which glslang fixes at the point of use.
#ifndef VKBERT_COMMON_GLSL
#define VKBERT_COMMON_GLSL

#define NEG_INF uintBitsToFloat(0xff800000u)

// Flat index of this invocation for 1-D work spread over a 2-D grid of workgroups (the x
// dimension of a dispatch is capped at 65535 groups on many devices).
uint flat_invocation()
{
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
           gl_LocalInvocationID.x;
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011):
// a counter-based generator, so every (seed, position) gives the same bits on every device.
uvec4 philox4x32_10(uvec4 counter, uvec2 key)
{
    for (int round = 0; round < 10; round++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, counter.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, counter.z, hi1, lo1);
        counter = uvec4(hi1 ^ counter.y ^ key.x, lo1, hi0 ^ counter.w ^ key.y, lo0);
        key += uvec2(0x9E3779B9u, 0xBB67AE85u);
    }
    return counter;
}

#endif
