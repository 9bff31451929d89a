cmake_minimum_required(VERSION 3.25)
# Copies the layer folders to a scratch tree, plants an upward include in the
# model layer, and expects check_layers.cmake to fail on it (and to pass before).
set(scratch "${CMAKE_CURRENT_BINARY_DIR}/layering-scratch")
file(REMOVE_RECURSE "${scratch}")
foreach(dir runtime persistence actors)
  file(COPY "${SOURCE}/${dir}" DESTINATION "${scratch}")
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${scratch} -P ${SOURCE}/cmake/check_layers.cmake
  RESULT_VARIABLE clean_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT clean_rc EQUAL 0)
  message(FATAL_ERROR "the check rejects the real tree")
endif()
file(WRITE "${scratch}/runtime/model/bad.hpp" "#include \"persistence/event_log.hpp\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${scratch} -P ${SOURCE}/cmake/check_layers.cmake
  RESULT_VARIABLE bad_rc ERROR_VARIABLE bad_err OUTPUT_QUIET)
file(REMOVE_RECURSE "${scratch}")
if(bad_rc EQUAL 0)
  message(FATAL_ERROR "the check accepted runtime/model including persistence/")
endif()
if(NOT bad_err MATCHES "runtime/model/bad.hpp")
  message(FATAL_ERROR "the check did not name the offending file: ${bad_err}")
endif()
message(STATUS "layering check rejects upward includes")
