// SPDX-License-Identifier: Apache-2.0
//
// The library under test as tarmac-nvml-sweep sees it: opened with dlopen,
// each function called by name with up to eight machine words (the x86-64
// and AArch64 C conventions let a caller pass more words than the callee
// reads), every answer written as one line to the report, and a crash in a
// call reported with the call's name before the sweep exits 3.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tarmac::nvmlsweep {

using Word = std::uintptr_t;

// A pointer as a call's word.
inline Word W(const void* p) { return reinterpret_cast<Word>(p); }

// NVML's name for `code` without NVML_ERROR_ ("SUCCESS", "GPU_IS_LOST");
// "CODE_<n>" for one NVML does not name.
std::string CodeName(int code);

// Where a call was made: the handle's label ("gpu0", "gpu1/mig2",
// "gpu1/gi3", "system") and its tags ("gpu,mig-on,root").
struct Where {
  std::string handle;
  std::string tags;
};

class Library {
 public:
  // Opens `path`; Ok() says whether it opened, Error() why not.
  explicit Library(const std::string& path, std::FILE* report);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  bool Ok() const { return handle_ != nullptr; }
  std::string Error() const { return error_; }
  // Whether the library exports `name`.
  bool Has(const std::string& name) const;

  // Calls `name` with `words` (missing ones 0) and returns its answer;
  // FUNCTION_NOT_FOUND (13) when the library lacks it. Not recorded.
  int Call(const std::string& name, const std::vector<Word>& words = {}) const;
  // Calls and records: "call NAME HANDLE TAGS ARGS CODE". A NAME ending
  // in "#size" (the size protocol's count query) calls the function before it.
  int Record(const std::string& name, const Where& where, const std::string& args,
             const std::vector<Word>& words);
  // A typed entry point, or nullptr.
  template <typename F>
  F Fn(const std::string& name) const {
    return reinterpret_cast<F>(Symbol(name));
  }

  // Writes one report line: the fields joined by tabs.
  void Line(const std::vector<std::string>& fields);

 private:
  void* Symbol(const std::string& name) const;
  void* handle_ = nullptr;
  std::string error_;
  std::FILE* report_;
};

// Installs handlers that, on SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT,
// write "crash <name of the call in flight> <signal>" to `fd` and exit 3.
void InstallCrashReport(int fd);

}  // namespace tarmac::nvmlsweep
