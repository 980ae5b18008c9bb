# Included after every project() of a llama.cpp unity build (CMAKE_UNITY_BUILD: ON, which
# build.py beside it pairs with CMAKE_PROJECT_INCLUDE=this file). At llama.cpp 0c1e57098:
# - common/json.cpp specializes templates that the sources before it in a unity batch already
#   instantiated ("specialization ... after instantiation"), so it is compiled alone;
# - src/ keeps its 32 core sources out of its unity batches (its CMakeLists), each compiled
#   alone for the same headers, a third of the build's CPU time; they batch without a
#   conflict, with the model sources, 16 to a batch (llama's own size). The build's cost:
#   benchmarks/results/llamacpp_build_cost.md.
# Once, at the end of the top directory, where the targets exist; a tree without them is left
# as it is.
get_property(_mnnrepro_unity_once GLOBAL PROPERTY MNNREPRO_UNITY_BATCHES)
if(NOT _mnnrepro_unity_once)
  set_property(GLOBAL PROPERTY MNNREPRO_UNITY_BATCHES 1)
  function(_mnnrepro_unity_batches)
    if(TARGET llama-common)
      set_source_files_properties(${CMAKE_SOURCE_DIR}/common/json.cpp
        TARGET_DIRECTORY llama-common PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
    if(TARGET llama)
      get_target_property(_sources llama SOURCES)
      list(TRANSFORM _sources PREPEND ${CMAKE_SOURCE_DIR}/src/)
      set_source_files_properties(${_sources}
        TARGET_DIRECTORY llama PROPERTIES SKIP_UNITY_BUILD_INCLUSION OFF)
    endif()
  endfunction()
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _mnnrepro_unity_batches)
endif()
