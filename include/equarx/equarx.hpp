// equarx — the whole C++ API.
#pragma once

#include "equarx/communicator.h"
#include "equarx/inspect.h"
#include "equarx/options.h"
#include "equarx/status.h"
#include "equarx/types.h"
