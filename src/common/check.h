// SPDX-License-Identifier: Apache-2.0
//
// TARMAC_CHECK(cond) guards invariants: when `cond` is false it is a bug, so
// the process logs the location and aborts. Expected failures use Status.
#pragma once

#include <cstdio>
#include <cstdlib>

#define TARMAC_CHECK(cond)                                                                    \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "tarmac: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
