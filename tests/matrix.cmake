# The test matrix. Each test is registered once (tests/CMakeLists.txt) with the axes it runs on;
# the CTest entries, their environments and their labels are generated here, so that a test's
# place in the matrix is written in one place and the CI scripts select by label:
#
#   swiftshader    runs on the second driver (.ci/swiftshader.sh: ctest -L '^swiftshader$')
#   sanitizers     runs under ASan/UBSan/LSan (.ci/sanitize.sh, from .ci/run)
#   kernels        the kernel tests of both families and the encoder, one run per driver
#                  (benchmarks/device-matrix.sh)
#   sg_width       a run at one of lavapipe's other subgroup sizes (the SUBGROUP_WIDTHS axis)
#   minimum        a run on the smallest conformant device (VKBERT_LIMITS=minimum)
#   lavapipe_only  a run that only adds coverage on lavapipe
#   timing         a test that measures or plots timings
#   build_machine  a test of the build itself (installing, symbols, plots): it needs the
#                  build machine's tools, not a GPU (benchmarks/device-check.sh
#                  leaves it out)
#
# Every run is on SwiftShader and under the sanitizers unless its axis or a NOT_ON says why not.
# The reasons are written beside the tests, and into the build's tests/left-out.txt.

set_property(GLOBAL PROPERTY VKBERT_LEFT_OUT "")

# Records that `run` is left out of `stage`, and why. (A reason is one list element: no ';'.)
function(vkbert_left_out stage run reason)
  set_property(GLOBAL APPEND_STRING PROPERTY VKBERT_LEFT_OUT "${stage}\t${run}\t${reason}\n")
endfunction()

# Whether `run` of test `name` is kept off `stage` by one of the NOT_ON pairs: "STAGE" leaves
# every run of the test off, "STAGE:SUFFIX" only the run named name_SUFFIX. Sets `out` to the
# reason, or to "" when the run stays.
function(vkbert_not_on_reason out stage name run pairs)
  set(reason "")
  list(LENGTH pairs count)
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE 0 ${last} 2)
      math(EXPR j "${i} + 1")
      list(GET pairs ${i} where)
      list(GET pairs ${j} why)
      if(where STREQUAL stage)
        set(reason "${why}")
      elseif(where MATCHES "^${stage}:(.+)$")
        # Two steps: CMAKE_MATCH_1 is set by the MATCHES, after its if() was expanded.
        if(run STREQUAL "${name}_${CMAKE_MATCH_1}")
          set(reason "${why}")
        endif()
      endif()
    endforeach()
  endif()
  set(${out} "${reason}" PARENT_SCOPE)
endfunction()

# Sets `out` to the stage labels (swiftshader, sanitizers) that `run` keeps, after the axis's
# own exclusions (AXIS_OFF: stage reason pairs) and the test's NOT_ON pairs.
function(vkbert_stage_labels out name run axis_off not_on)
  set(labels "")
  foreach(stage swiftshader sanitizers)
    vkbert_not_on_reason(reason ${stage} ${name} ${run} "${axis_off}")
    if(reason STREQUAL "")
      vkbert_not_on_reason(reason ${stage} ${name} ${run} "${not_on}")
    endif()
    if(reason STREQUAL "")
      list(APPEND labels ${stage})
    else()
      vkbert_left_out(${stage} ${run} "${reason}")
    endif()
  endforeach()
  set(${out} ${labels} PARENT_SCOPE)
endfunction()

# One CTest entry of a test binary: `binary --jobs 2 ARGS...` with ENV, its labels.
function(vkbert_test_run name run)
  cmake_parse_arguments(arg "" "" "ENV;ARGS;LABELS;AXIS_OFF;NOT_ON" ${ARGN})
  add_test(NAME ${run} COMMAND ${name} --jobs 2 ${arg_ARGS})
  vkbert_stage_labels(stages ${name} ${run} "${arg_AXIS_OFF}" "${arg_NOT_ON}")
  set_tests_properties(${run} PROPERTIES ENVIRONMENT "${arg_ENV}" TIMEOUT 900)
  set_property(TEST ${run} PROPERTY LABELS ${stages} ${arg_LABELS})
endfunction()

# vkbert_test(NAME DIR folder [axes...] [build options...] [NOT_ON stage[:run] "reason"]...)
#
# A Criterion binary built from DIR/NAME.c, run with validation on. Axes:
#   FAMILIES         once per kernel family (NAME_gpu, NAME_simd: VKBERT_KERNELS), so that the
#                    gpu family stays correct on a machine with no GPU; else once (NAME)
#   SUBGROUP_WIDTHS  NAME_sg4_FAMILY and NAME_sg16_FAMILY: lavapipe with LP_NATIVE_VECTOR_WIDTH
#                    128 (subgroups of 4) and 512 (16), beside the default 8 (docs/drivers.md);
#                    real GPUs have 16 (Mali) to 128 (Adreno). Each run asserts the size.
#   MINIMUM          NAME_minimum_FAMILY: VKBERT_LIMITS=minimum, every limit at what Vulkan 1.1
#                    requires, no 16-bit storage, no fp16 arithmetic, basic subgroups only.
#                    test_matmul's forced tiles of 256 invocations (*gpu_each_tile) cannot run
#                    there, by design, and are filtered out.
#   NO_SHUFFLE       NAME_simd_noshuffle: the simd family without subgroup shuffles (the
#                    kernels for devices whose subgroups are not 8 lanes), which lavapipe would
#                    otherwise never run
#   UNFUSED          NAME_unfused (and, with MINIMUM, NAME_unfused_minimum): the unfused
#                    attention path (split, scores, softmax, merge) through the whole layer
#   GPU_FILTER f     NAME_gpu: the cases matching Criterion's filter f again in the gpu family
#   KERNELS          the plain runs carry the `kernels` label (benchmarks/device-matrix.sh)
#   CLI              VKBERT_CLI names the vkbert tool the test runs
# Build options: SOURCES, INCLUDES, LIBS, LINK_OPTIONS (added to the binary), LABELS (added to
# every run).
function(vkbert_test name)
  cmake_parse_arguments(arg "FAMILIES;SUBGROUP_WIDTHS;MINIMUM;NO_SHUFFLE;UNFUSED;KERNELS;CLI"
                        "DIR;GPU_FILTER" "SOURCES;INCLUDES;LIBS;LINK_OPTIONS;LABELS;NOT_ON" ${ARGN})
  add_executable(${name} ${arg_DIR}/${name}.c ${arg_SOURCES})
  target_compile_options(${name} PRIVATE ${VKBERT_WARNINGS})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_include_directories(${name} PRIVATE ${arg_INCLUDES})
  target_link_libraries(${name} PRIVATE vkbert_test_support ${arg_LIBS})
  target_link_options(${name} PRIVATE ${arg_LINK_OPTIONS})

  vkbert_plain_runs(${name} "${arg_FAMILIES}" "${arg_CLI}" "${arg_KERNELS}" "${arg_NOT_ON}"
                    "${arg_LABELS}")
  set(common NOT_ON "${arg_NOT_ON}" LABELS ${arg_LABELS})
  if(arg_GPU_FILTER)
    vkbert_test_run(${name} ${name}_gpu ${common} ARGS --filter "${arg_GPU_FILTER}"
                    ENV "VKBERT_VALIDATION=1;VKBERT_KERNELS=gpu")
  endif()
  if(arg_UNFUSED)
    vkbert_test_run(${name} ${name}_unfused ${common}
                    ENV "VKBERT_VALIDATION=1;VKBERT_ATTENTION=unfused")
  endif()
  if(arg_NO_SHUFFLE)
    vkbert_test_run(${name} ${name}_simd_noshuffle ${common} lavapipe_only
      AXIS_OFF swiftshader "on a driver whose subgroups are not 8 lanes the simd kernels never \
shuffle (their shuffles need one 8-lane subgroup making up the workgroup), so this repeats the \
simd run"
      ENV "VKBERT_VALIDATION=1;VKBERT_KERNELS=simd;VKBERT_SIMD_SHUFFLE=0"
          "VKBERT_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/cache")
  endif()
  if(arg_SUBGROUP_WIDTHS)
    vkbert_subgroup_width_runs(${name} "${arg_NOT_ON}" "${arg_LABELS}")
  endif()
  if(arg_MINIMUM)
    vkbert_minimum_runs(${name} "${arg_NOT_ON}" "${arg_LABELS}" "${arg_UNFUSED}")
  endif()
endfunction()

# The plain runs: NAME_gpu and NAME_simd with FAMILIES, else NAME (with VKBERT_CLI for CLI).
function(vkbert_plain_runs name families cli kernels not_on labels)
  if(kernels)
    list(APPEND labels kernels)
  endif()
  if(families)
    foreach(family gpu simd)
      vkbert_test_run(${name} ${name}_${family} NOT_ON "${not_on}" LABELS ${labels}
                      ENV "VKBERT_VALIDATION=1;VKBERT_KERNELS=${family}")
    endforeach()
    return()
  endif()
  set(env "VKBERT_VALIDATION=1")
  if(cli)
    list(APPEND env "VKBERT_CLI=$<TARGET_FILE:vkbert_tool>")
  endif()
  vkbert_test_run(${name} ${name} NOT_ON "${not_on}" LABELS ${labels} ENV "${env}")
endfunction()

function(vkbert_subgroup_width_runs name not_on labels)
  foreach(sg 4 16)
    math(EXPR width "${sg} * 32")
    foreach(family gpu simd)
      vkbert_test_run(${name} ${name}_sg${sg}_${family} NOT_ON "${not_on}"
        LABELS ${labels} sg_width lavapipe_only
        AXIS_OFF
          swiftshader "it asserts the subgroup size LP_NATIVE_VECTOR_WIDTH gives lavapipe, and \
another driver has its own, which the plain runs cover"
          sanitizers "for time: it runs the same host code as the plain runs, which the \
sanitizers see"
        ENV "VKBERT_VALIDATION=1;VKBERT_KERNELS=${family};LP_NATIVE_VECTOR_WIDTH=${width}"
            "VKBERT_TEST_SUBGROUP_SIZE=${sg}")
    endforeach()
  endforeach()
endfunction()

function(vkbert_minimum_runs name not_on labels unfused)
  foreach(family gpu simd)
    vkbert_test_run(${name} ${name}_minimum_${family} NOT_ON "${not_on}"
                    LABELS ${labels} minimum ARGS --filter "!(*gpu_each_tile)"
                    ENV "VKBERT_VALIDATION=1;VKBERT_KERNELS=${family};VKBERT_LIMITS=minimum")
  endforeach()
  if(unfused)
    vkbert_test_run(${name} ${name}_unfused_minimum NOT_ON "${not_on}" LABELS ${labels} minimum
                    ENV "VKBERT_VALIDATION=1;VKBERT_ATTENTION=unfused;VKBERT_LIMITS=minimum")
  endif()
endfunction()

# vkbert_command_test(NAME COMMAND cmd... [TIMEOUT s] [SKIP_RETURN_CODE n] [VALIDATION]
#                     [BUILD_MACHINE] [LABELS ...] [NOT_ON stage "reason"]...)
# A test that is a script or a program of its own, with the same stage labels.
function(vkbert_command_test name)
  cmake_parse_arguments(arg "VALIDATION;BUILD_MACHINE" "TIMEOUT;SKIP_RETURN_CODE"
                        "COMMAND;LABELS;NOT_ON" ${ARGN})
  add_test(NAME ${name} COMMAND ${arg_COMMAND})
  vkbert_stage_labels(stages ${name} ${name} "" "${arg_NOT_ON}")
  set(labels ${stages} ${arg_LABELS})
  if(arg_BUILD_MACHINE)
    list(APPEND labels build_machine)
  endif()
  set_property(TEST ${name} PROPERTY LABELS ${labels})
  if(arg_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT})
  endif()
  if(arg_SKIP_RETURN_CODE)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${arg_SKIP_RETURN_CODE})
  endif()
  if(arg_VALIDATION)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "VKBERT_VALIDATION=1")
  endif()
endfunction()

# The runs left out of a stage, and why, for people and for the CI scripts to print.
function(vkbert_write_left_out)
  get_property(lines GLOBAL PROPERTY VKBERT_LEFT_OUT)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/left-out.txt
       "# stage\ttest\twhy it is left out (generated from tests/CMakeLists.txt)\n${lines}")
endfunction()
cmake_language(DEFER CALL vkbert_write_left_out)
