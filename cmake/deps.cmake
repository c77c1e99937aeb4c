# cJSON and utf8proc as the targets PkgConfig::CJSON and PkgConfig::UTF8PROC: from pkg-config,
# or, where VKBERT_CJSON_SOURCE / VKBERT_UTF8PROC_SOURCE name their source folders (a target with
# no package of them, such as Windows), built here as static libraries whose symbols stay
# inside vkbert.
if(NOT VKBERT_CJSON_SOURCE OR NOT VKBERT_UTF8PROC_SOURCE)
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
