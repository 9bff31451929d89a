cmake_minimum_required(VERSION 3.25)
# Fails the build when a file includes a header of a layer above its own.
# Layers, lowest first: runtime/model <- persistence <- actors <- runtime <- tools, bench.
# runtime/ holds rooms, each judged on its own:
#   runtime/engines     the built-in engines and embedders: the model alone
#   runtime/work        work items: the model, persistence, actors
#   runtime/cluster     the façade's cluster half: the lower layers and the façade's
#                       headers (runtime_impl.hpp), no engines, work or namespaces
#   runtime/ (façade)   everything below it and the engines, work and cluster rooms
#   runtime/namespaces  above the façade: one runtime per namespace
#   runtime/replication the replicated log and coordination store (NATS JetStream):
#                       the model and persistence
# Run as: cmake -DROOT=<repo root> -P check_layers.cmake
set(allowed_runtime/model "runtime/model")
set(allowed_persistence "runtime/model;persistence")
set(allowed_actors "runtime/model;persistence;actors")
set(allowed_runtime/engines "runtime/model;runtime/engines")
set(allowed_runtime/work "runtime/model;persistence;actors;runtime/work")
set(allowed_runtime/replication "runtime/model;persistence;runtime/replication")
set(allowed_runtime/cluster "runtime/model;persistence;actors;runtime;runtime/cluster;runtime/replication")
set(allowed_runtime
    "runtime/model;persistence;actors;runtime/engines;runtime/work;runtime/cluster;runtime/replication;runtime")
set(allowed_runtime/namespaces "runtime/model;persistence;actors;runtime;runtime/namespaces")
# Most specific first: a file (or an include) belongs to the first that matches.
set(rooms runtime/model runtime/engines runtime/work runtime/cluster runtime/replication runtime/namespaces)
set(layers ${rooms} persistence actors runtime)
set(all_layers ${rooms} persistence actors runtime tools bench tests)

# The layer a path (relative to the root) belongs to, or "".
function(layer_of path out)
  foreach(candidate IN LISTS all_layers)
    if(path MATCHES "^${candidate}/")
      set(${out} "${candidate}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

set(violations "")
foreach(layer IN LISTS layers)
  file(GLOB_RECURSE files "${ROOT}/${layer}/*.hpp" "${ROOT}/${layer}/*.cpp")
  foreach(f IN LISTS files)
    # runtime/ holds its rooms: judge each file by its deepest layer.
    file(RELATIVE_PATH rel "${ROOT}" "${f}")
    layer_of("${rel}" own_layer)
    if(NOT own_layer STREQUAL layer)
      continue()
    endif()
    file(STRINGS "${f}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
      layer_of("${inc}" target_layer)
      if(target_layer STREQUAL "")
        continue()
      endif()
      if(NOT target_layer IN_LIST allowed_${layer})
        list(APPEND violations "${rel} (layer ${layer}) includes ${inc}")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " msg)
  message(FATAL_ERROR "layering violation: a file includes a layer or room it may not:\n  ${msg}")
endif()
