cmake_minimum_required(VERSION 3.25)
# Copies the layer folders to a scratch tree, plants a forbidden include — one
# upward from the model layer, one between two of runtime/'s rooms — and expects
# check_layers.cmake to fail on each, naming the file (and to pass before).
set(scratch "${CMAKE_CURRENT_BINARY_DIR}/layering-scratch")
file(REMOVE_RECURSE "${scratch}")
foreach(dir runtime persistence actors)
  file(COPY "${SOURCE}/${dir}" DESTINATION "${scratch}")
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${scratch} -P ${SOURCE}/cmake/check_layers.cmake
  RESULT_VARIABLE clean_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT clean_rc EQUAL 0)
  file(REMOVE_RECURSE "${scratch}")
  message(FATAL_ERROR "the check rejects the real tree")
endif()

# expect_rejected(file include what): `file` (under the scratch root) including
# `include` must fail the check, which names the file.
function(expect_rejected file include what)
  file(WRITE "${scratch}/${file}" "#include \"${include}\"\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${scratch} -P ${SOURCE}/cmake/check_layers.cmake
    RESULT_VARIABLE bad_rc ERROR_VARIABLE bad_err OUTPUT_QUIET)
  file(REMOVE "${scratch}/${file}")
  if(bad_rc EQUAL 0)
    file(REMOVE_RECURSE "${scratch}")
    message(FATAL_ERROR "the check accepted ${what}")
  endif()
  if(NOT bad_err MATCHES "${file}")
    file(REMOVE_RECURSE "${scratch}")
    message(FATAL_ERROR "the check did not name the offending file: ${bad_err}")
  endif()
endfunction()

expect_rejected(runtime/model/bad.hpp persistence/event_log.hpp "runtime/model including persistence/")
# A room of runtime/ is held to its own includes, not the façade's.
expect_rejected(runtime/engines/bad.hpp runtime/cluster/cluster_link.hpp
  "runtime/engines including runtime/cluster/")
expect_rejected(runtime/engines/bad.hpp runtime/runtime.hpp "runtime/engines including the façade")
expect_rejected(runtime/work/bad.hpp runtime/engines/process_engine.hpp
  "runtime/work including runtime/engines/")
expect_rejected(runtime/runtime_bad.hpp runtime/namespaces/namespaces.hpp
  "the façade including runtime/namespaces/")
file(REMOVE_RECURSE "${scratch}")
message(STATUS "layering check rejects upward includes, between layers and between runtime's rooms")
