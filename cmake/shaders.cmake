# Shaders: GLSL -> SPIR-V -> C arrays, at build time, from the table in
# cmake/shader_variants.cmake. Besides the modules (shaders/<module>.c) it generates, in
# build/shaders/:
#   shaders.h          every module, as `extern const vkb_spirv vkb_shader_<module>`;
#   shader_variants.h  the selection axes (VKB_AXIS_*), each op's Push block size
#                      (VKB_PUSH_BYTES_<OP>, counted from its source) and its set of variants
#                      (vkb_variants_<op>);
#   shader_variants.c  the sets.
# Sets VKBERT_SHADER_SOURCES (the C sources to compile) and VKBERT_SHADER_NAMES (the modules,
# in table order).
set(VKBERT_SHADER_DIR ${CMAKE_CURRENT_BINARY_DIR}/shaders)
file(MAKE_DIRECTORY ${VKBERT_SHADER_DIR})
set_property(GLOBAL PROPERTY VKBERT_SHADER_SOURCES "")
set_property(GLOBAL PROPERTY VKBERT_SHADER_NAMES "")
set_property(GLOBAL PROPERTY VKBERT_VARIANT_OPS "")
set_property(GLOBAL PROPERTY VKBERT_VARIANT_KEYS "")

# The axes and what each means, in bit order.
function(vkbert_variant_axes)
  set(names "")
  set(enum "")
  set(bit 0)
  while(ARGN)
    list(POP_FRONT ARGN axis meaning)
    string(TOUPPER ${axis} upper)
    list(APPEND names ${axis})
    string(APPEND enum "    VKB_AXIS_${upper} = 1u << ${bit}, /* ${meaning} */\n")
    math(EXPR bit "${bit} + 1")
  endwhile()
  set_property(GLOBAL PROPERTY VKBERT_AXES ${names})
  set_property(GLOBAL PROPERTY VKBERT_AXES_ENUM "${enum}")
endfunction()

# The bytes of `source`'s push-constant block, whose members must be 32-bit scalars: C structs
# of uint32_t and float then match it member for member (std430 adds no padding between them).
function(vkbert_push_bytes source out)
  file(READ ${source} text)
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")
  string(REGEX MATCH "push_constant\\)[ \t\n]*uniform[ \t\n]+Push[ \t\n]*{[^}]*}" block "${text}")
  if(NOT block)
    set(${out} 0 PARENT_SCOPE)
    return()
  endif()
  string(REGEX REPLACE "^[^{]*{|}$" "" block "${block}")
  set(words 0)
  foreach(member IN LISTS block) # the members end with ';', CMake's list separator
    string(STRIP "${member}" member)
    if(member STREQUAL "")
      continue()
    endif()
    if(NOT member MATCHES "^(uint|int|float)[ \t\n]+([A-Za-z0-9_, \t\n]+)$")
      message(FATAL_ERROR "${source}: push constant `${member}` is not a list of 32-bit scalars")
    endif()
    string(REGEX MATCHALL "," commas "${CMAKE_MATCH_2}")
    list(LENGTH commas count)
    math(EXPR words "${words} + ${count} + 1")
  endforeach()
  math(EXPR bytes "${words} * 4")
  set(${out} ${bytes} PARENT_SCOPE)
endfunction()

# One module's build rule: glslc -O -Werror, spirv-val, then a C array.
function(vkbert_compile_shader name source defines)
  set(spv ${VKBERT_SHADER_DIR}/${name}.spv)
  set(gen ${VKBERT_SHADER_DIR}/${name}.c)
  list(TRANSFORM defines PREPEND -D)
  add_custom_command(
    OUTPUT ${gen}
    COMMAND ${GLSLC} --target-env=vulkan1.1 -O -Werror -MD -MF ${spv}.d -MT ${gen}
            -I ${CMAKE_CURRENT_SOURCE_DIR}/shaders ${defines}
            -o ${spv} ${CMAKE_CURRENT_SOURCE_DIR}/${source}
    COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${spv}
    COMMAND ${CMAKE_COMMAND} -DNAME=${name} -DINPUT=${spv} -DOUTPUT=${gen}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
    MAIN_DEPENDENCY ${source}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPFILE ${spv}.d
    COMMENT "SPIR-V ${name}"
    VERBATIM)
  set_property(GLOBAL APPEND PROPERTY VKBERT_SHADER_SOURCES ${gen})
  set_property(GLOBAL APPEND PROPERTY VKBERT_SHADER_NAMES ${name})
endfunction()

# The first module of an op registers the op and counts its Push block; the source is read at
# configure time, so a change to it configures again.
function(vkbert_register_op op source)
  get_property(ops GLOBAL PROPERTY VKBERT_VARIANT_OPS)
  if(op IN_LIST ops)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY VKBERT_VARIANT_OPS ${op})
  set_property(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  vkbert_push_bytes(${CMAKE_CURRENT_SOURCE_DIR}/${source} bytes)
  set_property(GLOBAL PROPERTY VKBERT_PUSH_BYTES_${op} ${bytes})
endfunction()

# The C expression of a list of axes; the module's (op, axes, tile) must be the only one.
function(vkbert_axes_mask op axes tile out)
  get_property(known GLOBAL PROPERTY VKBERT_AXES)
  set(expr "")
  foreach(axis IN LISTS axes)
    if(NOT axis IN_LIST known)
      message(FATAL_ERROR "shader variant of ${op}: unknown axis ${axis}")
    endif()
    string(TOUPPER ${axis} upper)
    list(APPEND expr VKB_AXIS_${upper})
    set_property(GLOBAL APPEND PROPERTY VKBERT_OP_AXES_${op} VKB_AXIS_${upper})
  endforeach()
  list(SORT expr)
  set(key "${op}/${expr}/${tile}")
  get_property(keys GLOBAL PROPERTY VKBERT_VARIANT_KEYS)
  if(key IN_LIST keys)
    message(FATAL_ERROR "two shader variants answer to ${key}")
  endif()
  set_property(GLOBAL APPEND PROPERTY VKBERT_VARIANT_KEYS ${key})
  list(JOIN expr " | " expr)
  if(expr STREQUAL "")
    set(expr 0)
  endif()
  set(${out} "${expr}" PARENT_SCOPE)
endfunction()

# One module, and the rows of its op's set it answers (one for each register tile it runs).
function(vkbert_variant name op)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "" "" "AXES;TILES;DEFINES")
  set(source shaders/${op}.comp)
  vkbert_register_op(${op} ${source})
  if(NOT ARG_TILES)
    set(ARG_TILES 0x0)
  endif()
  foreach(tile IN LISTS ARG_TILES)
    vkbert_axes_mask(${op} "${ARG_AXES}" ${tile} axes)
    string(REPLACE "x" ";" tm_tn4 ${tile})
    list(GET tm_tn4 0 tm)
    list(GET tm_tn4 1 tn4)
    set_property(GLOBAL APPEND_STRING PROPERTY VKBERT_VARIANTS_${op}
                 "    {&vkb_shader_${name}, ${axes}, ${tm}, ${tn4}},\n")
  endforeach()
  vkbert_compile_shader(${name} ${source} "${ARG_DEFINES}")
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/shader_variants.cmake)

# ---- the generated C side ----
get_property(VKBERT_SHADER_SOURCES GLOBAL PROPERTY VKBERT_SHADER_SOURCES)
get_property(VKBERT_SHADER_NAMES GLOBAL PROPERTY VKBERT_SHADER_NAMES)
get_property(vkbert_variant_ops GLOBAL PROPERTY VKBERT_VARIANT_OPS)
get_property(VKBERT_AXES_ENUM GLOBAL PROPERTY VKBERT_AXES_ENUM)

set(VKBERT_SHADER_DECLS "")
foreach(name IN LISTS VKBERT_SHADER_NAMES)
  string(APPEND VKBERT_SHADER_DECLS "extern const vkb_spirv vkb_shader_${name};\n")
endforeach()
set(VKBERT_VARIANT_DECLS "")
set(VKBERT_VARIANT_SETS "")
foreach(op IN LISTS vkbert_variant_ops)
  string(TOUPPER ${op} upper)
  get_property(bytes GLOBAL PROPERTY VKBERT_PUSH_BYTES_${op})
  get_property(rows GLOBAL PROPERTY VKBERT_VARIANTS_${op})
  get_property(op_axes GLOBAL PROPERTY VKBERT_OP_AXES_${op})
  list(REMOVE_DUPLICATES op_axes)
  list(JOIN op_axes " | " op_axes)
  if(op_axes STREQUAL "")
    set(op_axes 0)
  endif()
  string(APPEND VKBERT_VARIANT_DECLS
         "#define VKB_PUSH_BYTES_${upper} ${bytes} /* shaders/${op}.comp's Push block */\n"
         "extern const vkb_variant_set vkb_variants_${op};\n")
  string(APPEND VKBERT_VARIANT_SETS "static const vkb_variant ${op}_variants[] = {\n${rows}};\n"
         "const vkb_variant_set vkb_variants_${op} = {\n"
         "    ${op}_variants, sizeof ${op}_variants / sizeof *${op}_variants, ${op_axes}};\n\n")
endforeach()

file(CONFIGURE OUTPUT ${VKBERT_SHADER_DIR}/shaders.h @ONLY CONTENT
"/* Generated by cmake/shaders.cmake: the embedded SPIR-V modules. */
#ifndef VKBERT_SHADERS_H
#define VKBERT_SHADERS_H
#include \"vk/vk.h\"
@VKBERT_SHADER_DECLS@#endif
")
file(CONFIGURE OUTPUT ${VKBERT_SHADER_DIR}/shader_variants.h @ONLY CONTENT
"/* Generated by cmake/shaders.cmake from cmake/shader_variants.cmake: every op's modules and
 * the selection axes each answers to. src/tune/tune_variants.c picks from them. */
#ifndef VKBERT_SHADER_VARIANTS_H
#define VKBERT_SHADER_VARIANTS_H
#include \"shaders.h\"

enum {
@VKBERT_AXES_ENUM@};

typedef struct vkb_variant {
    const vkb_spirv *module;
    uint32_t axes;    /* VKB_AXIS_* bits */
    uint32_t tm, tn4; /* the register tile compiled in (rows x vec4 columns); 0 for none */
} vkb_variant;

/* The modules built from one shader source, shaders/<op>.comp. */
typedef struct vkb_variant_set {
    const vkb_variant *variants;
    uint32_t count;
    uint32_t axes; /* every axis some variant answers to */
} vkb_variant_set;

@VKBERT_VARIANT_DECLS@
#endif
")
file(CONFIGURE OUTPUT ${VKBERT_SHADER_DIR}/shader_variants.c @ONLY CONTENT
"/* Generated by cmake/shaders.cmake from cmake/shader_variants.cmake: do not edit. */
#include \"shader_variants.h\"

@VKBERT_VARIANT_SETS@")
list(APPEND VKBERT_SHADER_SOURCES ${VKBERT_SHADER_DIR}/shader_variants.c)
