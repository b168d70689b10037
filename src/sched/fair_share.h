// SPDX-License-Identifier: Apache-2.0
//
// Fair share between users: each user's recent GPU use, in GPU-seconds,
// decaying with a half-life, so that who used the GPUs lately waits behind
// who did not, and old use is forgiven. Pure: time is passed in.
//
// Thread safety: none; the scheduler owns one.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>

namespace tarmac::sched {

class FairShare {
 public:
  explicit FairShare(std::chrono::seconds half_life = std::chrono::hours(24)) : half_life_(half_life) {}

  // Adds `gpu_seconds` of use by user `uid` at `now`.
  void Charge(int64_t uid, double gpu_seconds, std::chrono::steady_clock::time_point now);

  // User `uid`'s decayed use at `now` (0 for a user never charged).
  double Usage(int64_t uid, std::chrono::steady_clock::time_point now) const;

  std::chrono::seconds half_life() const { return half_life_; }

  // Each user's use as last charged (not decayed), for persistence.
  struct Account {
    double gpu_seconds = 0;
    std::chrono::steady_clock::time_point as_of;
  };
  const std::map<int64_t, Account>& accounts() const { return accounts_; }
  // Puts back an account saved from accounts().
  void Restore(int64_t uid, Account account) { accounts_[uid] = account; }

 private:
  double Decayed(const Account& a, std::chrono::steady_clock::time_point now) const;

  std::chrono::seconds half_life_;
  std::map<int64_t, Account> accounts_;  // By uid.
};

}  // namespace tarmac::sched
