// SPDX-License-Identifier: LGPL-2.1-or-later
// heap_calls.hpp: glibc's malloc family replaced in this executable (glibc
// supports that: "Replacing malloc" in its manual), each call counted for
// its thread and handed to glibc's own allocator, so the heap stays glibc's.
#include "heap_calls.hpp"

#include <cerrno>
#include <cstddef>

#include <unistd.h>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void __libc_free(void*);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace rdmastream::harness {
namespace {

// Constant-initialised and the executable's own (initial-exec): reaching
// it allocates nothing, from the first malloc of any thread on.
thread_local HeapCalls t_calls __attribute__((tls_model("initial-exec")));

} // namespace

HeapCalls heap_calls_of_this_thread() noexcept { return t_calls; }

} // namespace rdmastream::harness

using rdmastream::harness::t_calls;

extern "C" {

void* malloc(std::size_t size) {
    ++t_calls.allocations;
    return __libc_malloc(size);
}

void* calloc(std::size_t n, std::size_t size) {
    ++t_calls.allocations;
    return __libc_calloc(n, size);
}

void* realloc(void* p, std::size_t size) {
    ++t_calls.allocations;
    return __libc_realloc(p, size);
}

void free(void* p) {
    if (p != nullptr) ++t_calls.frees;
    __libc_free(p);
}

int posix_memalign(void** out, std::size_t align, std::size_t size) {
    ++t_calls.allocations;
    if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
    void* p = __libc_memalign(align, size);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}

void* aligned_alloc(std::size_t align, std::size_t size) {
    ++t_calls.allocations;
    return __libc_memalign(align, size);
}

void* memalign(std::size_t align, std::size_t size) {
    ++t_calls.allocations;
    return __libc_memalign(align, size);
}

void* valloc(std::size_t size) {
    ++t_calls.allocations;
    return __libc_memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size);
}

void* pvalloc(std::size_t size) {
    ++t_calls.allocations;
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return __libc_memalign(page, (size + page - 1) / page * page);
}

} // extern "C"
