#version 450
// The example program's own kernel: b = a * scale + shift, element by element.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) writeonly buffer B { float b[]; };
layout(push_constant) uniform Push { uint n; float scale; float shift; } p;

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) b[i] = a[i] * p.scale + p.shift;
}
