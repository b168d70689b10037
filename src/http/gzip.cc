// SPDX-License-Identifier: Apache-2.0
#include "http/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace tarmac::http {

std::string Gzip(std::string_view text) {
  z_stream z{};
  // 15 window bits + 16: a gzip header and trailer rather than zlib's.
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return "";
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END ? out : "";
}

bool AcceptsGzip(std::string_view header) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    std::string lower;
    for (char c : item) {
      if (c != ' ' && c != '\t') lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    size_t semi = lower.find(';');
    std::string coding = lower.substr(0, semi);
    if (coding != "gzip" && coding != "*") continue;
    if (semi == std::string::npos) return true;
    std::string params = lower.substr(semi + 1);
    if (params.rfind("q=", 0) != 0) return true;
    return std::strtod(params.c_str() + 2, nullptr) > 0;
  }
  return false;
}

}  // namespace tarmac::http
