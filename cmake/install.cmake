# skein as a library others install: `cmake --install` puts libskein (one shared
# library carrying the model, persistence, actors and runtime layers, runtime's
# rooms included), the public
# headers, a CMake package (find_package(skein) -> skein::runtime) and a
# pkg-config file under the prefix.
#
# Installed layout:
#   lib/libskein.so.MAJOR.MINOR.PATCH (SONAME libskein.so.MAJOR.MINOR: before 1.0 a
#     minor version may break the ABI), libskein.so
#   include/skein/skein.hpp, include/skein/version.hpp
#   include/skein/runtime/..., include/skein/persistence/...  (the headers runtime.hpp
#     reaches; they include each other as "runtime/...", so include/skein is on the path)
#   lib/cmake/skein/{skeinConfig,skeinConfigVersion,skeinTargets}.cmake
#   lib/pkgconfig/skein.pc
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SKEIN_GENERATED_DIR "${PROJECT_BINARY_DIR}/generated")
configure_file(cmake/version.hpp.in "${SKEIN_GENERATED_DIR}/skein/version.hpp" @ONLY)
configure_file(cmake/skein.hpp.in "${SKEIN_GENERATED_DIR}/skein/skein.hpp" COPYONLY)
configure_file(cmake/skein.map.in "${SKEIN_GENERATED_DIR}/skein.map" @ONLY)
target_include_directories(skein_runtime PUBLIC "${SKEIN_GENERATED_DIR}")

# The public headers: what runtime.hpp includes, directly or not (the install
# test checks that none of them includes a dependency's header).
set(SKEIN_PUBLIC_HEADERS
  runtime/runtime.hpp
  runtime/namespaces/namespaces.hpp
  runtime/model/ids.hpp
  runtime/memory_service.hpp
  persistence/encryption.hpp
  persistence/event_log.hpp
  persistence/log_types.hpp
  persistence/recovery.hpp
  runtime/model/agent.hpp
  runtime/model/cancel_token.hpp
  runtime/model/cluster.hpp
  runtime/model/compaction.hpp
  runtime/model/effect_stats.hpp
  runtime/model/embedder.hpp
  runtime/model/embedding.hpp
  runtime/model/engine.hpp
  runtime/model/event.hpp
  runtime/model/event_list.hpp
  runtime/model/json_codec.hpp
  runtime/model/manifest.hpp
  runtime/model/memory_index.hpp
  runtime/model/run.hpp
  runtime/model/schedule.hpp
  runtime/model/status.hpp
  runtime/model/tool.hpp
  runtime/model/work.hpp
  runtime/model/work_api.hpp)

add_library(skein_shared SHARED "${SKEIN_GENERATED_DIR}/skein/skein.hpp")
set_target_properties(skein_shared PROPERTIES
  OUTPUT_NAME skein
  EXPORT_NAME runtime
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LINKER_LANGUAGE CXX
  LINK_DEPENDS "${SKEIN_GENERATED_DIR}/skein.map")
# Every object of the four layers and of runtime/'s rooms goes in (a host may reach any of them through
# the engines, tools and embedders it registers); linking the archives as well
# brings their own dependencies (CAF, RocksDB, simdjson, OpenSSL, date) along.
target_sources(skein_shared PRIVATE $<TARGET_OBJECTS:skein_namespaces> $<TARGET_OBJECTS:skein_runtime>
  $<TARGET_OBJECTS:skein_cluster> $<TARGET_OBJECTS:skein_replication> $<TARGET_OBJECTS:skein_work>
  $<TARGET_OBJECTS:skein_engines>
  $<TARGET_OBJECTS:skein_actors> $<TARGET_OBJECTS:skein_persistence> $<TARGET_OBJECTS:skein_model>)
target_link_libraries(skein_shared PRIVATE skein_namespaces)
target_link_options(skein_shared PRIVATE "LINKER:--version-script=${SKEIN_GENERATED_DIR}/skein.map")
# Every symbol resolved at link time — except in clang's sanitizer build, where
# the sanitizer runtime is linked into executables only and a shared library
# leaves its symbols to the executable that loads it.
if(NOT (CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_FLAGS MATCHES "-fsanitize="))
  target_link_options(skein_shared PRIVATE "LINKER:--no-undefined")
endif()
target_include_directories(skein_shared INTERFACE
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/skein>"
  "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
target_compile_features(skein_shared INTERFACE cxx_std_20)
add_library(skein::runtime ALIAS skein_shared)

install(TARGETS skein_shared EXPORT skeinTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT skein)
foreach(header IN LISTS SKEIN_PUBLIC_HEADERS)
  get_filename_component(dir "${header}" DIRECTORY)
  install(FILES "${header}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/skein/${dir}" COMPONENT skein)
endforeach()
install(FILES "${SKEIN_GENERATED_DIR}/skein/skein.hpp" "${SKEIN_GENERATED_DIR}/skein/version.hpp"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/skein" COMPONENT skein)

set(SKEIN_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/skein")
install(EXPORT skeinTargets NAMESPACE skein:: DESTINATION "${SKEIN_CMAKE_DIR}" COMPONENT skein)
configure_package_config_file(cmake/skeinConfig.cmake.in "${SKEIN_GENERATED_DIR}/skeinConfig.cmake"
  INSTALL_DESTINATION "${SKEIN_CMAKE_DIR}")
# Before 1.0 only the same minor version is compatible (the SONAME says the same).
write_basic_package_version_file("${SKEIN_GENERATED_DIR}/skeinConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${SKEIN_GENERATED_DIR}/skeinConfig.cmake" "${SKEIN_GENERATED_DIR}/skeinConfigVersion.cmake"
  DESTINATION "${SKEIN_CMAKE_DIR}" COMPONENT skein)

# pkg-config: the prefix is found from the .pc file's own place, so the package
# stays correct under `cmake --install --prefix` and DESTDIR.
file(RELATIVE_PATH SKEIN_PC_PREFIX_REL "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" SKEIN_PC_PREFIX_REL "${SKEIN_PC_PREFIX_REL}")
configure_file(cmake/skein.pc.in "${SKEIN_GENERATED_DIR}/skein.pc" @ONLY)
install(FILES "${SKEIN_GENERATED_DIR}/skein.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  COMPONENT skein)
