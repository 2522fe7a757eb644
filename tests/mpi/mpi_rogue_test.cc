// The socket data path under attack, one process per rank under mpirun, with a separate
// hostile process (equarx_rogue_client) on real TCP:
//
//   mpirun -np N mpi_rogue_test ROGUE_CLIENT_BINARY
//
// Each rank builds the socket transport exactly as CreateMpiCommunicator does (MPI_Allgather
// as the bootstrap), except that once every rank listens, rank 0 starts the rogue client on
// every rank's listener and all ranks wait until its connections are in (READY). Setup must
// still succeed on every rank, without waiting out the 30 s handshake timeout a silent
// connection would cost if connections were served one at a time; the rogue must see every
// one of its connections closed and, after setup, every listener refusing connections; and
// AllReduces on the resulting communicator must be exact (integer data, unquantized ring) and
// bitwise identical on every rank (int8). Prints PASS or FAIL on rank 0 after MPI_Finalize; exit
// status 0 iff every rank passed.
#include <mpi.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "equarx/communicator.h"
#include "job.h"
#include "transport/socket/socket_handshake.h"
#include "transport/socket/socket_transport.h"

extern char** environ;

namespace {

namespace hs = equarx::transport::handshake;

// The rogue client, run by rank 0: stdin to tell it setup is over, stdout to read its report.
struct Rogue {
  pid_t pid = -1;
  FILE* in = nullptr;   // its stdin
  FILE* out = nullptr;  // its stdout
  bool Start(const std::string& bin, int size, const std::string& targets) {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    const std::string n = std::to_string(size);
    const char* argv[] = {bin.c_str(), "--size", n.c_str(), "--targets", targets.c_str(), nullptr};
    const int rc = posix_spawn(&pid, bin.c_str(), &fa, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    in = fdopen(to[1], "w");
    out = fdopen(from[0], "r");
    return rc == 0;
  }
  std::string ReadLine() {
    char buf[1024];
    return out && std::fgets(buf, sizeof buf, out) ? std::string(buf) : std::string();
  }
  // Tells it setup is over; returns its report and whether it exited 0.
  bool Finish(std::string* report) {
    std::fputs("setup done\n", in);
    std::fclose(in);
    for (std::string l; !(l = ReadLine()).empty();) *report += l;
    std::fclose(out);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
};

bool AllAgree(bool ok) {
  int v = ok, all = 0;
  equarx::tools::MpiAllreduce(&v, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_rogue_test ROGUE_CLIENT_BINARY\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  bool ok = false;
  double setup_s = 0;
  {
    Rogue rogue;
    bool rogue_started = true;
    auto allgather = [&](const void* mine, size_t bytes, void* all) {
      MPI_Allgather(mine, int(bytes), MPI_BYTE, all, int(bytes), MPI_BYTE, MPI_COMM_WORLD);
      if (bytes != sizeof(hs::AddressCard)) return equarx::Status::Ok();
      if (rank == 0) {  // every rank listens now; nobody has connected yet
        std::string targets;
        for (int r = 0; r < size; ++r) {
          hs::AddressCard c;
          std::memcpy(&c, static_cast<const uint8_t*>(all) + size_t(r) * sizeof c, sizeof c);
          char a[INET_ADDRSTRLEN] = "?";
          inet_ntop(AF_INET, &c.addr, a, sizeof a);
          targets += (r ? "," : "") + std::to_string(r) + "@" + a + ":" + std::to_string(ntohs(c.port));
        }
        rogue_started = rogue.Start(argv[1], size, targets) && rogue.ReadLine().rfind("READY", 0) == 0;
      }
      MPI_Barrier(MPI_COMM_WORLD);
      return equarx::Status::Ok();
    };
    equarx::transport::SocketOptions o;
    o.setup_timeout_ms = o.handshake_timeout_ms = 30000;
    std::unique_ptr<equarx::transport::Transport> t;
    const auto t0 = std::chrono::steady_clock::now();
    equarx::Status st = equarx::transport::CreateSocketTransport(rank, size, allgather, o, &t);
    setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string why;
    if (!st.ok()) why = "setup: " + st.ToString();
    else if (setup_s > 10) why = "setup took " + std::to_string(setup_s) + " s";
    ok = AllAgree(why.empty());
    if (rank == 0) {
      std::string report;
      const bool rogue_ok = rogue_started && rogue.Finish(&report);
      std::printf("%s", report.c_str());
      if (!rogue_ok) why += std::string(why.empty() ? "" : "; ") + "the rogue client reported a failure";
    }
    ok = AllAgree(why.empty()) && ok;
    if (ok) {
      equarx::Communicator comm(std::move(t));
      const size_t count = 100003;
      std::vector<float> x(count), y(count), root(count);
      for (size_t i = 0; i < count; ++i) x[i] = float((i * 7 + size_t(rank) * 13) % 101);
      equarx::AllReduceOptions ring;
      ring.algorithm = equarx::Algorithm::kRing;
      st = comm.AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32, ring);
      for (size_t i = 0; i < count && st.ok() && why.empty(); ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += double((i * 7 + size_t(r) * 13) % 101);
        if (double(y[i]) != want) why = "ring element " + std::to_string(i) + " is not the exact sum";
      }
      if (st.ok()) st = comm.AllReduce(x.data(), y.data(), count, equarx::DType::kFloat32);  // int8 full_bidir
      equarx::tools::EndJobIfFailed(comm);
      if (!st.ok()) why = st.ToString();
      root = y;
      equarx::tools::MpiBcast(root.data(), int(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
      if (why.empty() && std::memcmp(root.data(), y.data(), count * sizeof(float)) != 0) why = "int8 result differs from rank 0's";
      ok = AllAgree(why.empty());
    }
    if (!why.empty()) std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
  }  // the communicator, the transport and the rogue client are gone here
  equarx::tools::MpiBarrier(MPI_COMM_WORLD);
  MPI_Finalize();
  // The verdict comes after the teardown, so that a crash in it cannot follow a PASS line
  // (CTest needs this line and exit status 0).
  if (rank == 0) std::printf("%s: %d ranks, setup %.2f s on rank 0 with the rogue attached\n", ok ? "PASS" : "FAIL", size, setup_s);
  return ok ? 0 : 1;
}
