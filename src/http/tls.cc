// SPDX-License-Identifier: Apache-2.0
#include "http/tls.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "common/safe_file.h"

namespace tarmac::http {
namespace {

// OpenSSL's last reason, and the queue cleared.
std::string OpenSslReason() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown reason";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

Result<std::string> ReadPem(const char* key, const std::string& path) {
  if (path.empty() || path[0] != '/') {
    return Status::FailedPrecondition(fmt::format("http: [http] {}: an absolute path", key), path);
  }
  Result<std::string> text = ReadForeignFile(path, {.max_bytes = 1 << 20, .follow_final_link = true});
  if (!text.ok())
    return Status::FailedPrecondition(fmt::format("http: [http] {}: cannot read it", key),
                                      text.status().ToString());
  return text;
}

}  // namespace

Result<std::unique_ptr<TlsContext>> TlsContext::Load(const std::string& cert_file,
                                                     const std::string& key_file) {
  Result<std::string> cert = ReadPem("tls_cert", cert_file);
  if (!cert.ok()) return cert.status();
  Result<std::string> key = ReadPem("tls_key", key_file);
  if (!key.ok()) return key.status();
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status::FailedPrecondition("http: TLS: cannot make a context", OpenSslReason());
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  // The certificate, then the rest of its chain, from one PEM text.
  BIO* bio = BIO_new_mem_buf(cert.value().data(), static_cast<int>(cert.value().size()));
  X509* leaf = PEM_read_bio_X509_AUX(bio, nullptr, nullptr, nullptr);
  bool is_loaded = leaf != nullptr && SSL_CTX_use_certificate(ctx, leaf) == 1;
  X509_free(leaf);
  while (is_loaded) {
    X509* next = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (next == nullptr) break;
    if (SSL_CTX_add0_chain_cert(ctx, next) != 1) {
      X509_free(next);
      is_loaded = false;
    }
  }
  BIO_free(bio);
  if (!is_loaded) {
    return Status::FailedPrecondition(fmt::format("http: [http] tls_cert {}: no PEM certificate", cert_file),
                                      OpenSslReason());
  }
  ERR_clear_error();  // The end of the chain reads as an error.
  bio = BIO_new_mem_buf(key.value().data(), static_cast<int>(key.value().size()));
  EVP_PKEY* pkey = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (pkey == nullptr) {
    return Status::FailedPrecondition(
        fmt::format("http: [http] tls_key {}: no PEM private key (unencrypted)", key_file), OpenSslReason());
  }
  // OpenSSL checks here that the key is the certificate's.
  is_loaded = SSL_CTX_use_PrivateKey(ctx, pkey) == 1 && SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(pkey);
  if (!is_loaded) {
    return Status::FailedPrecondition(
        fmt::format("http: [http] tls_key {} is not the key of tls_cert {}", key_file, cert_file),
        OpenSslReason());
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

std::shared_ptr<TlsSession> TlsContext::Accept(int fd) const {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return nullptr;
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return std::make_shared<TlsSession>(ssl);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

TlsWait TlsSession::WaitOf(int rc) {
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ:
      return TlsWait::kRead;
    case SSL_ERROR_WANT_WRITE:
      return TlsWait::kWrite;
    default:
      ERR_clear_error();
      return TlsWait::kFailed;
  }
}

TlsWait TlsSession::Handshake() {
  if (is_established_) return TlsWait::kNone;
  int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    is_established_ = true;
    return TlsWait::kNone;
  }
  return WaitOf(rc);
}

size_t TlsSession::Read(char* buf, size_t size, TlsWait* wait) {
  size_t n = 0;
  int rc = SSL_read_ex(ssl_, buf, size, &n);
  *wait = rc == 1 ? TlsWait::kNone : WaitOf(rc);
  return rc == 1 ? n : 0;
}

size_t TlsSession::Write(const char* buf, size_t size, TlsWait* wait) {
  size_t n = 0;
  int rc = SSL_write_ex(ssl_, buf, size, &n);
  *wait = rc == 1 ? TlsWait::kNone : WaitOf(rc);
  return rc == 1 ? n : 0;
}

bool TlsSession::has_pending() const { return SSL_pending(ssl_) > 0; }

void TlsSession::Shutdown() {
  if (is_established_) SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace tarmac::http
