# Turns one SPIR-V module into a C source that defines `const vkb_spirv vkb_shader_<NAME>`.
# Run as: cmake -DNAME=x -DINPUT=x.spv -DOUTPUT=x.c -P embed_spirv.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR byte_count "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])"
       "0x\\1," words "${hex}")
# SPIR-V words are little-endian in the file: flip each word's bytes to a C literal.
string(REGEX REPLACE "0x([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f]),"
       "0x\\4\\3\\2\\1," words "${words}")
string(REGEX REPLACE "(0x[0-9a-f]+,0x[0-9a-f]+,0x[0-9a-f]+,0x[0-9a-f]+,0x[0-9a-f]+,0x[0-9a-f]+,0x[0-9a-f]+,0x[0-9a-f]+,)"
       "\\1\n" words "${words}")
file(WRITE "${OUTPUT}.tmp"
"/* Generated from ${NAME}.spv by cmake/embed_spirv.cmake: do not edit. */
#include \"vk/vk.h\"

static const uint32_t code[] = {
${words}
};

const vkb_spirv vkb_shader_${NAME} = {\"${NAME}\", code, ${byte_count}};
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
