// SPDX-License-Identifier: Apache-2.0
//
// TLS for the agent's HTTP endpoint ([http] tls_cert and tls_key): the
// certificate chain and key loaded once (OpenSSL), and one session per
// connection on a non-blocking socket, so the one thread that waits for
// request heads also drives handshakes without ever blocking on a client.
//
// TLS 1.2 and later only; the library's default ciphers. Loading reads the
// files through the safe-open helper (regular files; a link as the last
// component followed, as certificate managers link renewed files).
//
// Thread safety: a TlsContext is shared by every connection; a TlsSession
// is used by one thread at a time (the head reader, then one worker).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/result.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace tarmac::http {

class TlsSession;

class TlsContext {
 public:
  // kFailedPrecondition naming the file and OpenSSL's reason when a file
  // cannot be read, holds no PEM certificate or key, or the key is not the
  // certificate's.
  static Result<std::unique_ptr<TlsContext>> Load(const std::string& cert_file, const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A session on `fd` (made non-blocking here); null when OpenSSL refuses.
  std::shared_ptr<TlsSession> Accept(int fd) const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// What a session's last step needs before it can go on.
enum class TlsWait { kNone, kRead, kWrite, kFailed };

class TlsSession {
 public:
  explicit TlsSession(SSL* ssl) : ssl_(ssl) {}
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Advances the handshake: kNone once it is done.
  TlsWait Handshake();
  bool is_established() const { return is_established_; }
  // Decrypted bytes into `buf`: > 0 read; 0 with `wait` set (kRead or
  // kWrite: try again when the socket is ready; kFailed: closed or broken).
  size_t Read(char* buf, size_t size, TlsWait* wait);
  // Encrypts and sends what it can: > 0 written, else 0 with `wait` set.
  size_t Write(const char* buf, size_t size, TlsWait* wait);
  // Decrypted bytes ready to read without the socket.
  bool has_pending() const;
  // A close_notify, without waiting for the peer's.
  void Shutdown();

 private:
  TlsWait WaitOf(int rc);
  SSL* ssl_;
  bool is_established_ = false;
};

}  // namespace tarmac::http
