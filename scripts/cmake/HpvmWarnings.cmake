# HpvmWarnings.cmake - the INTERFACE target hpvm_warnings carries the project's
# warning flags; link it PRIVATE into every project target.
add_library(hpvm_warnings INTERFACE)
target_compile_options(hpvm_warnings INTERFACE
  -Wall -Wextra -Wno-unused-parameter $<$<BOOL:${HPVM_WERROR}>:-Werror>)
