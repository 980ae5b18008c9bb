# Included after every project() of a llama.cpp unity build (CMAKE_UNITY_BUILD: ON, which
# toolchain/llamacpp.py pairs with CMAKE_PROJECT_INCLUDE=this file): common/json.cpp
# specializes templates that the sources before it in a unity batch already instantiated
# ("specialization ... after instantiation" at llama.cpp 0c1e57098), so it is compiled alone.
# Once, at the end of the top directory, where the target exists; a tree without it is left
# as it is.
get_property(_mnnrepro_unity_once GLOBAL PROPERTY MNNREPRO_UNITY_JSON_ALONE)
if(NOT _mnnrepro_unity_once)
  set_property(GLOBAL PROPERTY MNNREPRO_UNITY_JSON_ALONE 1)
  function(_mnnrepro_json_alone)
    if(TARGET llama-common)
      set_source_files_properties(${CMAKE_SOURCE_DIR}/common/json.cpp
        TARGET_DIRECTORY llama-common PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endfunction()
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _mnnrepro_json_alone)
endif()
