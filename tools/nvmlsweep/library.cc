// SPDX-License-Identifier: Apache-2.0
#include "library.h"

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstring>

namespace tarmac::nvmlsweep {
namespace {

// The call in flight, for the crash report (written by the sweep's one
// thread, read by its signal handler).
char g_in_flight[128] = "the sweep itself";  // NOLINT: read by a signal handler.
int g_report_fd = 1;                         // NOLINT

void OnCrash(int signal_number) {
  char line[256] = "crash\t";
  std::strncat(line, g_in_flight, 160);
  std::strcat(line, "\t");
  std::strncat(line, sigabbrev_np(signal_number) != nullptr ? sigabbrev_np(signal_number) : "?", 16);
  std::strcat(line, "\n");
  ssize_t ignored = ::write(g_report_fd, line, std::strlen(line));
  (void)ignored;
  _exit(3);
}

}  // namespace

std::string CodeName(int code) {
  static const char* const kNames[] = {"SUCCESS",
                                       "UNINITIALIZED",
                                       "INVALID_ARGUMENT",
                                       "NOT_SUPPORTED",
                                       "NO_PERMISSION",
                                       "ALREADY_INITIALIZED",
                                       "NOT_FOUND",
                                       "INSUFFICIENT_SIZE",
                                       "INSUFFICIENT_POWER",
                                       "DRIVER_NOT_LOADED",
                                       "TIMEOUT",
                                       "IRQ_ISSUE",
                                       "LIBRARY_NOT_FOUND",
                                       "FUNCTION_NOT_FOUND",
                                       "CORRUPTED_INFOROM",
                                       "GPU_IS_LOST",
                                       "RESET_REQUIRED",
                                       "OPERATING_SYSTEM",
                                       "LIB_RM_VERSION_MISMATCH",
                                       "IN_USE",
                                       "MEMORY",
                                       "NO_DATA",
                                       "VGPU_ECC_NOT_SUPPORTED",
                                       "INSUFFICIENT_RESOURCES",
                                       "FREQ_NOT_SUPPORTED",
                                       "ARGUMENT_VERSION_MISMATCH",
                                       "DEPRECATED",
                                       "NOT_READY",
                                       "GPU_NOT_FOUND",
                                       "INVALID_STATE",
                                       "RESET_TYPE_NOT_SUPPORTED"};
  if (code >= 0 && code < static_cast<int>(sizeof kNames / sizeof kNames[0])) return kNames[code];
  if (code == 999) return "UNKNOWN";
  return "CODE_" + std::to_string(code);
}

Library::Library(const std::string& path, std::FILE* report) : report_(report) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) error_ = ::dlerror();
}

Library::~Library() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* Library::Symbol(const std::string& name) const {
  return handle_ == nullptr ? nullptr : ::dlsym(handle_, name.c_str());
}

bool Library::Has(const std::string& name) const { return Symbol(name) != nullptr; }

int Library::Call(const std::string& name, const std::vector<Word>& words) const {
  using Any = int (*)(Word, Word, Word, Word, Word, Word, Word, Word);
  Any f = Fn<Any>(name);
  if (f == nullptr) return 13;
  Word w[8] = {};
  for (size_t i = 0; i < words.size() && i < 8; ++i) w[i] = words[i];
  std::strncpy(g_in_flight, name.c_str(), sizeof g_in_flight - 1);
  int code = f(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
  std::strncpy(g_in_flight, "the sweep itself", sizeof g_in_flight - 1);
  return code;
}

int Library::Record(const std::string& name, const Where& where, const std::string& args,
                    const std::vector<Word>& words) {
  int code = Call(name.substr(0, name.find('#')), words);
  Line({"call", name, where.handle, where.tags, args.empty() ? "-" : args, CodeName(code)});
  return code;
}

void Library::Line(const std::vector<std::string>& fields) {
  std::string line;
  for (const std::string& f : fields) {
    if (!line.empty()) line += '\t';
    line += f;
  }
  line += '\n';
  std::fputs(line.c_str(), report_);
  std::fflush(report_);
}

void InstallCrashReport(int fd) {
  g_report_fd = fd;
  struct sigaction action {};
  action.sa_handler = OnCrash;
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(s, &action, nullptr);
}

}  // namespace tarmac::nvmlsweep
