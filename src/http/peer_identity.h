// SPDX-License-Identifier: Apache-2.0
//
// Who is at the other end of an HTTP connection, for limits that count per
// client (the event streams one client may hold). On loopback every local
// user comes from 127.0.0.1, so the address says nothing: there the kernel
// names the user, as the owner of the client's end of the connection in
// /proc/net/tcp (or tcp6). Beyond loopback, and when the kernel's table does
// not say, the client is its address.
//
// Thread-safe: reads procfs, keeps nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tarmac::http {

// The uid owning the socket whose local end is `client_port` and whose far
// end is `server_port`, from the text of /proc/net/tcp or /proc/net/tcp6 (a
// header line, then "sl local_address rem_address st ... uid ..." rows with
// hexadecimal HOST:PORT). Pure.
std::optional<int64_t> ConnectionOwner(std::string_view proc_net_tcp, int client_port, int server_port);

// "uid 1000" for a loopback client whose owner the kernel names, else
// "address 10.0.0.7". Reads /proc/net/tcp and /proc/net/tcp6.
std::string ClientIdentity(const std::string& peer_address, int peer_port, int local_port);

}  // namespace tarmac::http
