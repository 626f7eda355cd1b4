// SPDX-License-Identifier: LGPL-2.1-or-later
// Where the heap calls come from: malloc_count's counts say how many
// happen per frame, this says which code makes them. With
//
//   MALLOC_COUNT_TRACE=FROM[,COUNT]   (COUNT default 40)
//   MALLOC_COUNT_TRACE_OUT=FILE       (default stderr)
//
// the first COUNT allocations (malloc, calloc, realloc, the aligned ones,
// new) made from the FROM-th rxe doorbell on (0: from the start) until the
// process hangs up each append their call stack to FILE: a line "# KIND
// SIZE bytes, thread TID, doorbell N" (N: doorbells rung before it), then
// backtrace_symbols_fd(3)'s frames ("FILE(+0xOFFSET)" for a symbol the
// module does not export: addr2line -e FILE OFFSET), then an empty line. bench/malloc_count/trace-stacks.py names and counts them.
// Frees are not traced: an allocation per frame shows with its free.
#pragma once

#include <cstddef>

namespace malloc_count {

// From the library's constructor: reads the variables above and loads
// what backtrace(3) needs (libgcc_s, which it loads on its first call
// through malloc) before any call is traced.
void trace_init() noexcept;

// An allocation of `size` bytes by `kind` ("malloc", "new", ...), made
// after `doorbells` doorbells: its stack, if it falls in the window.
void trace(const char* kind, std::size_t size, unsigned long long doorbells) noexcept;

// The process hung up (the window closes, as malloc_count's does).
void trace_stop() noexcept;

} // namespace malloc_count
