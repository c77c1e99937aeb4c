# The library's layers, each a target that compiles against its own folder and the folders of
# the layers below it, never above: an include across the arrows fails to compile ("No such
# file or directory") instead of tangling the code unnoticed.
#
#   perf -> api -> nn -> ops -> tune -> vk -> platform
#                  nn -> io -> platform
#
# A layer's headers are reached through its view: build/layers/<layer>/ holds one link,
# <layer> -> src/<layer>, and the target vkbert_view_<layer> puts that folder on the include
# path of whoever links it, with the views of the layers below (its headers include theirs).
# No target has src/ itself on its include path, so "nn/encoder/encoder.h" resolves only where
# the nn view is linked. A file's own folder stays reachable by the compiler's usual rule, so
# "vk.h" inside src/vk keeps working.
function(vkbert_view layer)
  set(dir ${PROJECT_BINARY_DIR}/layers/${layer})
  file(MAKE_DIRECTORY ${dir})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${dir}/${layer} SYMBOLIC)
  add_library(vkbert_view_${layer} INTERFACE)
  target_include_directories(vkbert_view_${layer} INTERFACE $<BUILD_INTERFACE:${dir}>)
  target_link_libraries(vkbert_view_${layer} INTERFACE ${ARGN})
endfunction()

# A layer of the shipped library: objects with hidden symbols, built once into both vkbert and
# vkbert_static, compiled with its own view (and, through it, the views below).
function(vkbert_layer layer)
  add_library(vkbert_${layer} OBJECT ${ARGN})
  set_target_properties(vkbert_${layer} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
  target_compile_definitions(vkbert_${layer} PRIVATE VKBERT_BUILDING_LIBRARY)
  target_compile_options(vkbert_${layer} PRIVATE ${VKBERT_WARNINGS})
  target_link_libraries(vkbert_${layer} PRIVATE vkbert_view_${layer})
endfunction()

# The rules stay enforced: each case is one #include compiled with exactly the include path and
# definitions of one target (a layer, or the command-line tool), as a target that `all` leaves
# out. The test layer_rules builds them: an allowed include must compile, a forbidden one must
# fail for want of the header. CASES: TARGET HEADER allowed|forbidden, repeated.
function(vkbert_layer_rules_test)
  set(allowed "")
  set(forbidden "")
  set(cases ${ARGN})
  while(cases)
    list(POP_FRONT cases target header verdict)
    string(MAKE_C_IDENTIFIER "${target}_${header}" id)
    set(source ${PROJECT_BINARY_DIR}/layer_rules/${id}.c)
    file(CONFIGURE OUTPUT ${source} CONTENT "#include \"${header}\"\nint layer_rule_${id};\n")
    add_library(layer_rule_${id} OBJECT EXCLUDE_FROM_ALL ${source})
    target_include_directories(layer_rule_${id} PRIVATE
                               $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
    target_compile_definitions(layer_rule_${id} PRIVATE
                               $<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>)
    list(APPEND ${verdict} "layer_rule_${id}=${header}")
  endwhile()
  add_test(NAME layer_rules COMMAND ${CMAKE_COMMAND} -DBUILD=${PROJECT_BINARY_DIR}
           "-DALLOWED=${allowed}" "-DFORBIDDEN=${forbidden}" $<$<BOOL:$<CONFIG>>:-DCONFIG=$<CONFIG>>
           -P ${PROJECT_SOURCE_DIR}/cmake/layer_rules.cmake)
  set_tests_properties(layer_rules PROPERTIES TIMEOUT 300)
endfunction()
