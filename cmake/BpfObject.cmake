# ballast_bpf_object(<name> <source>)
#
# Compiles <source> (an XDP program) with clang -target bpf -O2 -g into
# ${CMAKE_BINARY_DIR}/bpf/<name>.bpf.o (with BTF), generates the libbpf
# skeleton <name>.skel.h beside it, and defines an INTERFACE target
# <name>_skel that C++ code links to include it.
find_program(BPF_CLANG NAMES clang-14 clang REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
execute_process(COMMAND uname -m OUTPUT_VARIABLE BALLAST_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE)
if(BALLAST_ARCH STREQUAL "x86_64")
  set(BALLAST_BPF_ARCH x86)
  set(BALLAST_MULTIARCH_INCLUDE /usr/include/x86_64-linux-gnu)
elseif(BALLAST_ARCH STREQUAL "aarch64")
  set(BALLAST_BPF_ARCH arm64)
  set(BALLAST_MULTIARCH_INCLUDE /usr/include/aarch64-linux-gnu)
else()
  message(FATAL_ERROR "unsupported architecture ${BALLAST_ARCH}")
endif()

set(BALLAST_BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
file(MAKE_DIRECTORY ${BALLAST_BPF_OUT})
file(GLOB_RECURSE BALLAST_BPF_HEADERS CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/bpf/*.h)

if(BALLAST_WERROR)
  set(BALLAST_BPF_WERROR -Werror)
endif()

function(ballast_bpf_object name source)
  set(obj ${BALLAST_BPF_OUT}/${name}.bpf.o)
  set(skel ${BALLAST_BPF_OUT}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -target bpf -O2 -g -Wall ${BALLAST_BPF_WERROR}
            -D__TARGET_ARCH_${BALLAST_BPF_ARCH}
            -I${CMAKE_SOURCE_DIR}/bpf/include -I${CMAKE_SOURCE_DIR}/bpf/lib
            -idirafter ${BALLAST_MULTIARCH_INCLUDE}
            -c ${source} -o ${obj}
    DEPENDS ${source} ${BALLAST_BPF_HEADERS}
    COMMENT "BPF ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_bpf DEPENDS ${obj} ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_bpf)
  # SYSTEM: generated code is not held to our warning flags.
  target_include_directories(${name}_skel SYSTEM INTERFACE ${BALLAST_BPF_OUT})
  target_include_directories(${name}_skel INTERFACE ${CMAKE_SOURCE_DIR}/bpf/include)
endfunction()
