# What every gate tool's project shares: C++17, the engine's tree and libraries given on the
# command line, and add_gate_tool(<program> <source> <include dirs>...) linking them.
set(GATE_COMMON_DIR ${CMAKE_CURRENT_LIST_DIR})
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)

function(require_engine source_var libs_var what)
  if(NOT ${source_var} OR NOT ${libs_var})
    message(FATAL_ERROR "give -D${source_var}=<${what} tree> and -D${libs_var}=<the engine's .so files>")
  endif()
endfunction()

function(add_gate_tool program source libs)
  add_executable(${program} ${source})
  target_include_directories(${program} PRIVATE ${GATE_COMMON_DIR} ${ARGN})
  target_link_libraries(${program} PRIVATE ${libs})
endfunction()
