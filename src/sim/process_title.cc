// SPDX-License-Identifier: Apache-2.0
#include "sim/process_title.h"

#include <sys/prctl.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "sim/cuda_context.h"

namespace tarmac::sim {

Status SetProcessTitle(int argc, char** argv, const std::string& title) {
  std::vector<std::string> words;
  std::istringstream in(title);
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty()) return Status::InvalidArgument("the title is empty");
  // argv's strings, one after the other, as the kernel laid them out.
  char* begin = argv[0];
  char* end = argv[0];
  for (int i = 0; i < argc; ++i) {
    if (argv[i] != end) return Status::FailedPrecondition("the arguments are not one block of memory");
    end = argv[i] + std::strlen(argv[i]) + 1;
  }
  std::string block;
  for (const std::string& word : words) block += word + '\0';
  size_t room = static_cast<size_t>(end - begin);
  if (block.size() > room) {
    return Status::InvalidArgument("the title needs " + std::to_string(block.size()) +
                                   " bytes; the arguments hold " + std::to_string(room));
  }
  std::memset(begin, 0, room);
  std::memcpy(begin, block.data(), block.size());
  std::string name = words[0].substr(words[0].rfind('/') + 1).substr(0, 15);
  ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
  return Status::OK();
}

Result<std::string> TakeTitle(int argc, char** argv, const std::string& title) {
  if (title.empty()) return CommandLineOf(argc, argv);
  if (Status set = SetProcessTitle(argc, argv, title); !set.ok()) return set;
  return title;
}

}  // namespace tarmac::sim
