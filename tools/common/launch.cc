// equarx tools — how this process was started (see launch.h).
#include "launch.h"

#include <cstdlib>

namespace equarx::tools {

bool UnderMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

}  // namespace equarx::tools
