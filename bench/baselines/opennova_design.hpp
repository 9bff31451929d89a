// opennova_design: the storage design of the OpenNova agent tool, rebuilt in C++ as a
// skein-bench baseline. One JSONL file per thread, whose first line is the manifest:
//
//   <dir>/<thread>.jsonl := manifest "\n" (event "\n")*
//   manifest, event      := one line of JSON (no "\n" inside)
//
// append_event appends one line and fdatasyncs the file before it returns.
// end_run replaces the manifest line. Line 1 changes length as the manifest changes,
// so replacing it means rewriting the file: read it whole, put the new line 1 before
// the events, write <thread>.jsonl.tmp, fsync it, rename it over <thread>.jsonl. The
// directory is not fsynced after the rename: that spares the baseline one sync per
// rewrite that a power-loss-safe rename would need, so it errs in the design's favour.
//
// Each thread has a mutex held across each call: an append that slipped between the
// read and the rename of a rewrite would be lost. Thread-safe. Files are opened and
// closed per call: no descriptor is held per thread, so any number of threads fits
// under the process's file limit.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/model/status.hpp"

namespace skein::bench {

class opennova_store {
 public:
  // `dir` must exist; the files go directly in it.
  explicit opennova_store(std::string dir);
  opennova_store(const opennova_store&) = delete;
  opennova_store& operator=(const opennova_store&) = delete;

  // Creates `thread`'s file holding only its manifest line (fsynced); it must not exist.
  status create_thread(const std::string& thread, std::string_view manifest_json);

  // Appends one event line to a created thread's file; durable when it returns ok.
  status append_event(const std::string& thread, std::string_view json_line);

  // Replaces the manifest line of a created thread's file; durable when it returns ok.
  status end_run(const std::string& thread, std::string_view manifest_json);

  // Reads a thread's file back: its manifest line and its event lines, in order.
  // Fails on a file that does not end in "\n" (a torn last line).
  status read_thread(const std::string& thread, std::string* manifest_json,
                     std::vector<std::string>* events);

 private:
  struct thread_file {
    std::mutex mutex;  // held across every call on the file: see the top of the file
    std::string path;
  };

  status find(const std::string& thread, thread_file** out);

  std::string dir_;
  std::mutex threads_mutex_;  // guards threads_ (the map, not the files)
  std::unordered_map<std::string, std::unique_ptr<thread_file>> threads_;
};

}  // namespace skein::bench
