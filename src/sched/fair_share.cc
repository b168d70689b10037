// SPDX-License-Identifier: Apache-2.0
#include "sched/fair_share.h"

#include <cmath>

namespace tarmac::sched {

double FairShare::Decayed(const Account& a, std::chrono::steady_clock::time_point now) const {
  double age_s = std::chrono::duration<double>(now - a.as_of).count();
  if (age_s <= 0 || half_life_.count() <= 0) return a.gpu_seconds;
  return a.gpu_seconds * std::exp2(-age_s / static_cast<double>(half_life_.count()));
}

void FairShare::Charge(int64_t uid, double gpu_seconds, std::chrono::steady_clock::time_point now) {
  Account& a = accounts_[uid];
  a.gpu_seconds = Decayed(a, now) + gpu_seconds;
  a.as_of = now;
}

double FairShare::Usage(int64_t uid, std::chrono::steady_clock::time_point now) const {
  auto it = accounts_.find(uid);
  return it == accounts_.end() ? 0.0 : Decayed(it->second, now);
}

}  // namespace tarmac::sched
