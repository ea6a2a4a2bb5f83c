# Layering.cmake - checks that a program's folders are layers: every source
# file belongs to a layer, and includes only files of its own layer or of the
# layers below it. Run as a test, once per program:
#   cmake -DPROGRAM=hpvm_rt -DROOT=<hpvm_rt/src> -P Layering.cmake
#   cmake -DPROGRAM=frontend -DROOT=<frontend> -DRT_SRC=<hpvm_rt/src>
#         -P Layering.cmake
# An include "a/b.h" (or "b.h") names the file ROOT/a/b.h if it exists, else
# the file beside the includer; anything else (the public hpvm_rt/ headers,
# libraries) is outside the program and not checked, except that the
# frontend may reach the runtime's internal headers (RT_SRC) only in the
# parts listed in rt_parts_frontend.
cmake_minimum_required(VERSION 3.18)

# Layers, bottom up. "a+b" is one layer of two folders (they may include each
# other); "." is the files directly in ROOT.
#
# hpvm_rt: base (errors, the knob vocabulary, files) < config (configuration
# files and their match to a program's fused nodes; all the exporter links)
# < approx (the approximate engines) < kernels (the layers, which choose
# among the engines) < core (the executor) < command (what the commands
# share: option tables, progress, .npy, the program runner interface) <
# tuner (tune-search, bench-knobs) < driver (the program's command line and
# run modes, which run the tuner's commands) < library (the C entry points
# of a program's shared library).
set(layers_hpvm_rt "base;config;approx;kernels;core;command;tuner;driver;library")
# frontend: support (diagnostics, input files, interrupts: used by every
# layer) < ir (the graph and the op table) < onnx (loading) < passes <
# lower < codegen < toolchain (building the generated program), then the
# pipeline and the command line.
set(layers_frontend "support;ir;onnx;passes;lower;codegen;toolchain;.")
# The runtime's internal parts the frontend may include.
set(rt_parts_frontend "config")

if(NOT DEFINED layers_${PROGRAM})
  message(FATAL_ERROR "Layering.cmake: unknown PROGRAM '${PROGRAM}'")
endif()

# layer_of(<path relative to ROOT> <out>): the layer index, or -1.
function(layer_of rel out)
  string(FIND "${rel}" "/" slash)
  if(slash EQUAL -1)
    set(folder ".")
  else()
    string(SUBSTRING "${rel}" 0 ${slash} folder)
  endif()
  set(index 0)
  foreach(layer IN LISTS layers_${PROGRAM})
    string(REPLACE "+" ";" folders "${layer}")
    if(folder IN_LIST folders)
      set(${out} ${index} PARENT_SCOPE)
      return()
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  set(${out} -1 PARENT_SCOPE)
endfunction()

get_filename_component(ROOT "${ROOT}" ABSOLUTE)
if(RT_SRC)
  get_filename_component(RT_SRC "${RT_SRC}" ABSOLUTE)
endif()
set(violations "")
file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/*.h ${ROOT}/*.cpp
     ${ROOT}/*.def ${ROOT}/*.in)
foreach(rel IN LISTS files)
  layer_of("${rel}" mine)
  if(mine EQUAL -1)
    string(APPEND violations "  ${rel}: in no layer of ${PROGRAM}\n")
    continue()
  endif()
  list(GET layers_${PROGRAM} ${mine} my_layer)
  get_filename_component(dir "${rel}" DIRECTORY)
  file(STRINGS ${ROOT}/${rel} includes REGEX "^#include \"[^\"]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
    if(EXISTS ${ROOT}/${inc} AND NOT IS_DIRECTORY ${ROOT}/${inc})
      set(target "${inc}")
    elseif(dir AND EXISTS ${ROOT}/${dir}/${inc})
      set(target "${dir}/${inc}")
    elseif(RT_SRC AND EXISTS ${RT_SRC}/${inc})
      string(REGEX REPLACE "/.*" "" part "${inc}")
      if(NOT part IN_LIST rt_parts_${PROGRAM})
        string(APPEND violations "  ${rel}: ${line} (the runtime's internal "
               "header; ${PROGRAM} may include only: ${rt_parts_${PROGRAM}})\n")
      endif()
      continue()
    else()
      continue()
    endif()
    layer_of("${target}" theirs)
    if(theirs GREATER mine)
      list(GET layers_${PROGRAM} ${theirs} their_layer)
      string(APPEND violations "  ${rel}: ${line} (${my_layer} must not "
             "depend on ${their_layer}, a layer above it)\n")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "${PROGRAM} layering broken (layers, bottom up: "
                      "${layers_${PROGRAM}}):\n${violations}")
endif()
message(STATUS "${PROGRAM} layering ok (${layers_${PROGRAM}})")
