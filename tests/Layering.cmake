# Layering.cmake - checks that each part of hpvm_rt includes only the parts
# it may depend on (a part may always include itself, the shared headers at
# src/ level and the public include/). Run as a test:
#   cmake -DRT_SRC=<hpvm_rt/src> -P Layering.cmake
# Layers, bottom up: approx (the approximate engines) < kernels (the layers,
# which choose among the engines) < core (the executor) < driver and tuner
# (one layer: the programs' commands, tune-search among them) < library
# (the C entry points of a program's shared library).
cmake_minimum_required(VERSION 3.18)
set(allowed_approx "")
set(allowed_kernels "approx")
set(allowed_core "kernels;approx")
set(allowed_driver "tuner;core;kernels;approx")
set(allowed_tuner "driver;core;kernels;approx")
set(allowed_library "driver;tuner;core;kernels;approx")
set(parts approx kernels core driver tuner library)

set(violations "")
foreach(part IN LISTS parts)
  file(GLOB_RECURSE files ${RT_SRC}/${part}/*.h ${RT_SRC}/${part}/*.cpp)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^#include \"[a-z]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([a-z]+)/.*" "\\1" dep "${line}")
      if(dep STREQUAL part OR NOT dep IN_LIST parts)
        continue()
      endif()
      if(NOT dep IN_LIST allowed_${part})
        file(RELATIVE_PATH rel ${RT_SRC} ${file})
        string(APPEND violations "  ${rel}: ${line} (${part} must not "
                                 "depend on ${dep})\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "hpvm_rt layering broken:\n${violations}")
endif()
message(STATUS "hpvm_rt layering ok")
