// SPDX-License-Identifier: LGPL-2.1-or-later
// A clock anchor as a person reads it, for the programs' logs.
#pragma once

#include "rdmastream/clock_anchor.hpp"

#include <string>

namespace rdmastream::cli {

// "2026-12-03T13:20:01.123456789 UTC (realtime, synchronized)": the instant
// of pts 0; TAI instants are given on TAI's own scale, named "TAI".
std::string describe(const ClockAnchor& anchor);

} // namespace rdmastream::cli
