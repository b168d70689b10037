// SPDX-License-Identifier: Apache-2.0
//
// A stand-in process takes the command line of the program it stands in
// for: `tarmac-simload --title "python3 train.py --config llama3-8b.yaml"`
// reads in /proc as that command, as a CUDA program would, so what tarmac
// shows of a simulated lab looks like a lab. The title is written over the
// process's own argument strings (as setproctitle does): /proc/<pid>/cmdline
// then reads the title's words, each ended by a NUL, and /proc/<pid>/comm
// the first word's base name (at most 15 bytes, as the kernel keeps it).
//
// Thread safety: call from main before other threads start; it rewrites
// argv's memory.
#pragma once

#include <string>

#include "common/result.h"
#include "common/status.h"

namespace tarmac::sim {

// Makes this process's command line read `title`, split into words at
// spaces. An error (and nothing changed) when the title is empty or longer
// than argv's strings together, or when argv's strings are not one block.
// Every string argv pointed to is overwritten: copy what is still needed
// first.
Status SetProcessTitle(int argc, char** argv, const std::string& title);

// For a stand-in's --title: with a title, sets it (SetProcessTitle) and
// returns it; without one, returns argv joined (CommandLineOf). Either is
// what its load file records as its command.
Result<std::string> TakeTitle(int argc, char** argv, const std::string& title);

}  // namespace tarmac::sim
