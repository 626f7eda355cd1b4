// SPDX-License-Identifier: LGPL-2.1-or-later
// The calling thread's heap calls, for tests that a per-frame path makes
// none. A test binary that links heap_calls.cpp replaces glibc's malloc
// family with one that counts each thread's calls and hands them on to
// glibc's own (__libc_malloc, ...): operator new, std::string, fmt and the
// C++ runtime's exceptions all allocate through it. Not under
// AddressSanitizer, which replaces malloc itself (tests/harness/CMakeLists.txt
// builds no such binary then).
#pragma once

#include <cstdint>

namespace rdmastream::harness {

struct HeapCalls {
    std::uint64_t allocations = 0; // malloc, calloc, realloc, the aligned allocators
    std::uint64_t frees = 0;       // free of a non-null pointer
};

// This thread's calls since it started.
HeapCalls heap_calls_of_this_thread() noexcept;

} // namespace rdmastream::harness
