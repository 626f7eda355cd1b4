// SPDX-License-Identifier: LGPL-2.1-or-later
// malloc_trace.hpp: the stacks of heap calls in the steady state. Runs
// inside malloc: no heap, no stdio, no locks; each thread guards against
// its own re-entry (backtrace(3) may allocate).
#include "malloc_trace.hpp"

#include "heap_free_text.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

namespace malloc_count {
namespace {

constexpr int kMaxFrames = 48;

std::atomic<bool> g_on{false};            // MALLOC_COUNT_TRACE given, and not hung up yet
unsigned long long g_from = 0;             // the doorbell the window opens at
std::atomic<long long> g_left{0};          // stacks still to write
int g_fd = 2;
// Set while this thread is inside trace(): what backtrace(3) allocates
// there is not traced. initial-exec: no allocation to reach it (the
// library is preloaded, so its TLS is static).
thread_local bool t_inside __attribute__((tls_model("initial-exec"))) = false;

// "FROM" or "FROM,COUNT", decimal; false if neither.
bool parse(const char* s, unsigned long long& from, long long& count) {
    char* end = nullptr;
    from = std::strtoull(s, &end, 10);
    if (end == s) return false;
    count = 40;
    if (*end == ',') {
        const char* c = end + 1;
        count = std::strtoll(c, &end, 10);
        if (end == c || count < 0) return false;
    }
    return *end == '\0';
}

// "# malloc 64 bytes, thread 123, doorbell 45\n" without the heap
using Header = HeapFreeText<128>;

} // namespace

void trace_init() noexcept {
    const char* spec = std::getenv("MALLOC_COUNT_TRACE");
    if (spec == nullptr) return;
    long long count = 0;
    if (!parse(spec, g_from, count)) {
        static const char kBad[] = "malloc_count: MALLOC_COUNT_TRACE must be FROM or FROM,COUNT (doorbell, stacks)\n";
        [[maybe_unused]] const ssize_t w = write(2, kBad, sizeof kBad - 1);
        return;
    }
    if (const char* path = std::getenv("MALLOC_COUNT_TRACE_OUT")) {
        g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (g_fd < 0) return;
    }
    t_inside = true;
    void* frames[4];
    backtrace(frames, 4); // loads libgcc_s now, outside any traced call
    t_inside = false;
    g_left.store(count, std::memory_order_relaxed);
    g_on.store(true, std::memory_order_release);
}

void trace(const char* kind, std::size_t size, unsigned long long doorbells) noexcept {
    if (!g_on.load(std::memory_order_relaxed) || doorbells < g_from || t_inside) return;
    if (g_left.fetch_sub(1, std::memory_order_relaxed) <= 0) return;
    t_inside = true;
    void* frames[kMaxFrames];
    const int n = backtrace(frames, kMaxFrames);
    Header h;
    h.add("# ");
    h.add(kind);
    h.add(" ");
    h.add(static_cast<unsigned long long>(size));
    h.add(" bytes, thread ");
    h.add(static_cast<unsigned long long>(gettid()));
    h.add(", doorbell ");
    h.add(doorbells);
    h.add("\n");
    [[maybe_unused]] ssize_t w = write(g_fd, h.buf, h.len);
    // Frame 0 is trace() itself, 1 the interposed allocator: left out.
    if (n > 2) backtrace_symbols_fd(frames + 2, n - 2, g_fd);
    w = write(g_fd, "\n", 1);
    t_inside = false;
}

void trace_stop() noexcept { g_on.store(false, std::memory_order_relaxed); }

} // namespace malloc_count
