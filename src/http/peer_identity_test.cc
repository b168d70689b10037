// SPDX-License-Identifier: Apache-2.0
#include "http/peer_identity.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tarmac::http {
namespace {

// Two connections on loopback to port 9477 (0x2505): a client of uid 1000
// from port 40000 (0x9C40), and the server's end of it (uid 0).
constexpr std::string_view kTable =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 0100007F:2505 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 100 1\n"
    "   1: 0100007F:9C40 0100007F:2505 01 00000000:00000000 00:00000000 00000000  1000        0 101 1\n"
    "   2: 0100007F:2505 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 102 1\n";

TEST(PeerIdentityTest, TheClientsEndNamesItsOwner) {
  EXPECT_EQ(ConnectionOwner(kTable, 40000, 9477), 1000);
  EXPECT_EQ(ConnectionOwner(kTable, 9477, 40000), 0);  // The server's own end.
  EXPECT_FALSE(ConnectionOwner(kTable, 40001, 9477).has_value());
  EXPECT_FALSE(ConnectionOwner("", 40000, 9477).has_value());
  EXPECT_FALSE(ConnectionOwner("header\n   1: garbage\n", 40000, 9477).has_value());
}

TEST(PeerIdentityTest, ARealLoopbackConnectionIsItsOwnersAndAnAddressIsAnAddress) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t length = sizeof addr;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  sockaddr_in mine{};
  length = sizeof mine;
  ASSERT_EQ(::getsockname(client, reinterpret_cast<sockaddr*>(&mine), &length), 0);
  EXPECT_EQ(ClientIdentity("127.0.0.1", ntohs(mine.sin_port), ntohs(addr.sin_port)),
            "uid " + std::to_string(::geteuid()));
  EXPECT_EQ(ClientIdentity("10.0.0.7", ntohs(mine.sin_port), ntohs(addr.sin_port)), "address 10.0.0.7");
  ::close(client);
  ::close(listener);
}

}  // namespace
}  // namespace tarmac::http
