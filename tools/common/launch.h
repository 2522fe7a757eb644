// equarx tools — how this process was started.
#pragma once

namespace equarx::tools {

/// True when this process was started by mpirun (Open MPI, or a PMI/PMIx launcher): the tools
/// then run one rank per process instead of an in-process group.
bool UnderMpirun();

}  // namespace equarx::tools
