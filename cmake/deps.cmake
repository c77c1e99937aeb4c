# cJSON, utf8proc and PCRE2 (its 8-bit library) as the targets PkgConfig::CJSON,
# PkgConfig::UTF8PROC and PkgConfig::PCRE2: from pkg-config, or, where VKBERT_CJSON_SOURCE /
# VKBERT_UTF8PROC_SOURCE / VKBERT_PCRE2_SOURCE name their source folders (a target with no
# package of them, such as Windows), built here as static libraries whose symbols stay inside
# vkbert.
if(NOT VKBERT_CJSON_SOURCE OR NOT VKBERT_UTF8PROC_SOURCE OR NOT VKBERT_PCRE2_SOURCE)
  find_package(PkgConfig REQUIRED)
endif()

if(VKBERT_CJSON_SOURCE)
  add_library(vkbert_cjson STATIC ${VKBERT_CJSON_SOURCE}/cJSON.c)
  # The sources are included as <cjson/cJSON.h>, the installed name.
  file(COPY ${VKBERT_CJSON_SOURCE}/cJSON.h DESTINATION ${CMAKE_CURRENT_BINARY_DIR}/deps/cjson)
  target_include_directories(vkbert_cjson PUBLIC ${CMAKE_CURRENT_BINARY_DIR}/deps)
  # cJSON.h would otherwise declare its functions dllexport on Windows.
  target_compile_definitions(vkbert_cjson PUBLIC CJSON_HIDE_SYMBOLS)
  set_target_properties(vkbert_cjson PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
  add_library(PkgConfig::CJSON ALIAS vkbert_cjson)
else()
  pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
endif()

if(VKBERT_UTF8PROC_SOURCE)
  # utf8proc.c includes its tables, utf8proc_data.c.
  add_library(vkbert_utf8proc STATIC ${VKBERT_UTF8PROC_SOURCE}/utf8proc.c)
  target_include_directories(vkbert_utf8proc PUBLIC ${VKBERT_UTF8PROC_SOURCE})
  # utf8proc.h declares its functions dllimport on Windows unless linked statically.
  target_compile_definitions(vkbert_utf8proc PUBLIC UTF8PROC_STATIC)
  set_target_properties(vkbert_utf8proc PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
  add_library(PkgConfig::UTF8PROC ALIAS vkbert_utf8proc)
else()
  pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
endif()

if(VKBERT_PCRE2_SOURCE)
  # The 8-bit library alone, without JIT, configured as PCRE2's NON-AUTOTOOLS-BUILD describes:
  # its generic config.h, pcre2.h and character tables copied to their working names.
  set(pcre2_src ${VKBERT_PCRE2_SOURCE}/src)
  set(pcre2_out ${CMAKE_CURRENT_BINARY_DIR}/deps/pcre2)
  configure_file(${pcre2_src}/config.h.generic ${pcre2_out}/config.h COPYONLY)
  configure_file(${pcre2_src}/pcre2.h.generic ${pcre2_out}/pcre2.h COPYONLY)
  configure_file(${pcre2_src}/pcre2_chartables.c.dist ${pcre2_out}/pcre2_chartables.c COPYONLY)
  set(pcre2_units auto_possess compile config context convert dfa_match error extuni
      find_bracket jit_compile maketables match match_data newline ord2utf pattern_info
      script_run serialize string_utils study substitute substring tables ucd valid_utf xclass)
  set(pcre2_files ${pcre2_out}/pcre2_chartables.c)
  foreach(unit IN LISTS pcre2_units)
    list(APPEND pcre2_files ${pcre2_src}/pcre2_${unit}.c)
  endforeach()
  add_library(vkbert_pcre2 STATIC ${pcre2_files})
  target_include_directories(vkbert_pcre2 PUBLIC ${pcre2_out} PRIVATE ${pcre2_src})
  # PCRE2_STATIC: pcre2.h would otherwise declare its functions dllimport on Windows.
  target_compile_definitions(vkbert_pcre2 PUBLIC PCRE2_STATIC PRIVATE HAVE_CONFIG_H
                             PCRE2_CODE_UNIT_WIDTH=8 SUPPORT_UNICODE)
  set_target_properties(vkbert_pcre2 PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
  add_library(PkgConfig::PCRE2 ALIAS vkbert_pcre2)
else()
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
endif()
