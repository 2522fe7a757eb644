// equarx_rogue_client — a hostile process against the socket transport's setup, over real TCP
// (tests/support/rogue.h has the attacks). Started by mpi_rogue_test's rank 0 while every
// rank listens and none has connected yet:
//
//   equarx_rogue_client --size N --targets R@A.B.C.D:PORT,... [--watch-ms MS]
//
// 1. Opens every attack (wrong secret, old unauthenticated hello, silence, garbage, a claimed
//    rank then silence) against every target, prints READY, and watches each connection on
//    its own thread, answering a challenge with a wrong proof.
// 2. When a line arrives on stdin (the mesh is up on every rank), waits for the watchers,
//    then tries every target again: each must refuse the connection (the listener is
//    closed); one that accepts gets an oversized frame header.
// Prints one ROGUE line per attempt and exits 0 iff every connection made during setup was
// closed by its rank without being accepted and every attempt after setup was refused.
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/rogue.h"

namespace rogue = equarx::testing::rogue;

namespace {

bool ParseTargets(const std::string& list, std::vector<rogue::Target>* out) {
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t at = item.find('@'), colon = item.rfind(':');
    if (at == std::string::npos || colon == std::string::npos || colon < at) return false;
    rogue::Target t;
    t.rank = std::atoi(item.substr(0, at).c_str());
    in_addr a{};
    if (inet_pton(AF_INET, item.substr(at + 1, colon - at - 1).c_str(), &a) != 1) return false;
    t.addr = a.s_addr;
    t.port = htons(uint16_t(std::atoi(item.substr(colon + 1).c_str())));
    out->push_back(t);
  }
  return !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
  int size = 0, watch_ms = 20000;
  std::vector<rogue::Target> targets;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--size") size = std::atoi(v.c_str());
    else if (k == "--watch-ms") watch_ms = std::atoi(v.c_str());
    else if (k == "--targets" && ParseTargets(v, &targets)) continue;
    else size = -1;
  }
  if (size < 1 || targets.empty()) {
    std::fprintf(stderr, "usage: equarx_rogue_client --size N --targets R@ADDR:PORT,... [--watch-ms MS]\n");
    return 2;
  }
  // 1. During setup.
  std::vector<std::unique_ptr<rogue::Connection>> conns;
  int failures = 0;
  for (const auto& t : targets)
    for (rogue::Attack a : rogue::AllAttacks()) {
      conns.push_back(std::make_unique<rogue::Connection>(a, t, size));
      if (!conns.back()->Start()) {
        std::printf("ROGUE FAIL during-setup %s -> %s: %s\n", rogue::AttackName(a), rogue::TargetName(t).c_str(),
                    conns.back()->detail().c_str());
        ++failures;
      }
    }
  std::vector<char> closed(conns.size(), 0);
  std::vector<std::thread> watchers;
  for (size_t i = 0; i < conns.size(); ++i)
    watchers.emplace_back([&, i] { closed[i] = conns[i]->Watch(watch_ms); });
  std::printf("READY %zu connections\n", conns.size());
  std::fflush(stdout);
  // 2. After setup.
  std::string line;
  std::getline(std::cin, line);
  for (auto& w : watchers) w.join();
  for (size_t i = 0; i < conns.size(); ++i) {
    const auto& c = *conns[i];
    const bool ok = closed[i] && c.detail().find("ACCEPTED") == std::string::npos;
    failures += !ok;
    std::printf("ROGUE %s during-setup %s -> %s: %s\n", ok ? "ok" : "FAIL", rogue::AttackName(c.attack()),
                rogue::TargetName(c.target()).c_str(), c.detail().c_str());
  }
  for (const auto& t : targets) {
    int fd = -1;
    const int err = rogue::TryConnect(t, &fd);
    if (err == ECONNREFUSED) {
      std::printf("ROGUE ok after-setup %s: connection refused (the listener is closed)\n", rogue::TargetName(t).c_str());
      continue;
    }
    ++failures;
    if (fd >= 0) {
      const uint64_t header[2] = {1, uint64_t(1) << 62};  // a frame of 4 EiB
      const bool sent = send(fd, header, sizeof header, MSG_NOSIGNAL) == ssize_t(sizeof header);
      std::printf("ROGUE FAIL after-setup %s: the listener still accepts (oversized header %s)\n",
                  rogue::TargetName(t).c_str(), sent ? "sent" : "not sent");
      close(fd);
    } else {
      std::printf("ROGUE FAIL after-setup %s: %s (expected: refused)\n", rogue::TargetName(t).c_str(), std::strerror(err));
    }
  }
  std::printf("ROGUE-SUMMARY %s: %d failure(s) in %zu during-setup and %zu after-setup attempts\n",
              failures ? "FAIL" : "PASS", failures, conns.size(), targets.size());
  return failures ? 1 : 0;
}
