// SPDX-License-Identifier: Apache-2.0
//
// Mutex and MutexLock: std::mutex with clang's thread-safety annotations, so
// that state shared between threads says which mutex guards it
// (GUARDED_BY), functions say what they expect held (REQUIRES) or not held
// (EXCLUDES), and `-Wthread-safety` proves every access at compile time.
// scripts/check-thread-safety runs that analysis in `make test` (the build
// itself may be GCC, which ignores the annotations).
//
//   class Counter {
//    public:
//     void Add() EXCLUDES(mu_) { MutexLock lock(&mu_); ++n_; }
//    private:
//     void AddLocked() REQUIRES(mu_) { ++n_; }
//     Mutex mu_;
//     int n_ GUARDED_BY(mu_) = 0;
//   };
//
// Thread safety: that is the point.
#pragma once

#include <condition_variable>
#include <mutex>
#include <stop_token>

#if defined(__clang__)
#define TARMAC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TARMAC_THREAD_ANNOTATION(x)
#endif

// Other libraries' headers (gRPC's) may define the same names first: ours,
// with the same meaning, win.
#undef CAPABILITY
#undef SCOPED_CAPABILITY
#undef GUARDED_BY
#undef PT_GUARDED_BY
#undef REQUIRES
#undef EXCLUDES
#undef ACQUIRE
#undef RELEASE
#undef TRY_ACQUIRE
#undef NO_THREAD_SAFETY_ANALYSIS
#define CAPABILITY(x) TARMAC_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY TARMAC_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) TARMAC_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) TARMAC_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) TARMAC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) TARMAC_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) TARMAC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) TARMAC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) TARMAC_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS TARMAC_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tarmac {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() RELEASE() {
    if (is_held_) mu_->unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets go of the mutex for a while (a slow call), and takes it again.
  void Unlock() RELEASE() {
    mu_->unlock();
    is_held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_->lock();
    is_held_ = true;
  }

  // Waits on `cv` (releasing the mutex meanwhile) until `done()` or a stop
  // is requested; the mutex is held again on return. `done` runs with the
  // mutex held: annotate it REQUIRES(mu).
  template <typename Predicate>
  bool Wait(std::condition_variable_any& cv, std::stop_token stop, Predicate done) NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait(*mu_, stop, done);
  }
  template <typename Predicate>
  void Wait(std::condition_variable_any& cv, Predicate done) NO_THREAD_SAFETY_ANALYSIS {
    cv.wait(*mu_, done);
  }
  template <typename Predicate, typename Duration>
  bool WaitFor(std::condition_variable_any& cv, Duration timeout, Predicate done) NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_for(*mu_, timeout, done);
  }
  // As Wait with a stop token, but also returns (false) at `deadline`.
  template <typename Predicate, typename TimePoint>
  bool WaitUntil(std::condition_variable_any& cv, std::stop_token stop, TimePoint deadline,
                 Predicate done) NO_THREAD_SAFETY_ANALYSIS {
    return cv.wait_until(*mu_, stop, deadline, done);
  }

 private:
  Mutex* mu_;
  bool is_held_ = true;
};

}  // namespace tarmac
