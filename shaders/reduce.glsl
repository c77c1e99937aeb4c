// Workgroup-wide reductions (max or sum) for kernels that give one row to one workgroup:
// subgroup operations, then shared memory across subgroups; built with
// NO_SUBGROUP_ARITHMETIC (devices without subgroup arithmetic), a shared-memory tree.
// Include after the local_size layout; every invocation of the workgroup must call reduce().
#ifndef VKBERT_REDUCE_GLSL
#define VKBERT_REDUCE_GLSL
#ifndef NO_SUBGROUP_ARITHMETIC
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

shared float partial[gl_WorkGroupSize.x];

#ifndef NO_SUBGROUP_ARITHMETIC
float reduce(float v, bool is_max)
{
    v = is_max ? subgroupMax(v) : subgroupAdd(v);
    if (subgroupElect()) partial[gl_SubgroupID] = v;
    barrier();
    float r = partial[0];
    for (uint k = 1; k < gl_NumSubgroups; k++) r = is_max ? max(r, partial[k]) : r + partial[k];
    barrier(); // partial is reused by the next reduction
    return r;
}
#else
float reduce(float v, bool is_max)
{
    uint t = gl_LocalInvocationID.x;
    partial[t] = v;
    barrier();
    for (uint half_size = gl_WorkGroupSize.x / 2; half_size > 0; half_size /= 2) {
        if (t < half_size) {
            float o = partial[t + half_size];
            partial[t] = is_max ? max(partial[t], o) : partial[t] + o;
        }
        barrier();
    }
    float r = partial[0];
    barrier();
    return r;
}
#endif

#endif
