// SPDX-License-Identifier: Apache-2.0
//
// Random identifiers that must not repeat or be guessed: a lease's token,
// a request's key.
#pragma once

#include <string>

namespace tarmac {

// 128 bits from std::random_device, as 32 hex digits.
std::string RandomHex128();

}  // namespace tarmac
