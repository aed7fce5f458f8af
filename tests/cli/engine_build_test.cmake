# The build's generated/engine_build.txt, which the engine identity digests
# (CMakeLists.txt): it must name the compiler, the build type and the flags
# this build compiles the executors with, and the digest of the top-level
# CMakeLists.txt, so a rebuild with other ones never reuses the cached
# results of this one.
#   cmake -DFILE=<engine_build.txt> -DIDENTITY=<engine_identity.h> -DCOMPILER=<id> -DVERSION=<ver>
#         -DTYPE=<build type> -DFLAGS=<flags> -DTOP=<CMakeLists.txt> -P engine_build_test.cmake
if(NOT EXISTS "${FILE}")
  message(FATAL_ERROR "${FILE} was not written at configure time")
endif()
file(STRINGS "${FILE}" lines)
set(found "")
foreach(l IN LISTS lines)
  if(l MATCHES "^compiler ")
    set(found "${l}")
  endif()
endforeach()
if(found STREQUAL "")
  message(FATAL_ERROR "${FILE} has no compiler line: ${lines}")
endif()
string(STRIP "${FLAGS}" flags)
foreach(want "compiler ${COMPILER} ${VERSION} " " build ${TYPE} " "${flags}")
  string(FIND "${found}" "${want}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${FILE}: '${found}' does not contain '${want}'")
  endif()
endforeach()
if(NOT lines MATCHES "dnnl [0-9]")
  message(FATAL_ERROR "${FILE}: no library versions: ${lines}")
endif()
file(SHA256 "${TOP}" top)
if(NOT lines MATCHES "CMakeLists.txt ${top}")
  message(FATAL_ERROR "${FILE}: no digest of ${TOP} (${top}): ${lines}")
endif()
file(STRINGS "${IDENTITY}" id REGEX "TORQ_ENGINE_IDENTITY \"torq-sim-[0-9a-f]+\"")
if(id STREQUAL "")
  message(FATAL_ERROR "${IDENTITY}: no identity")
endif()
message(STATUS "engine build: ${found}")
