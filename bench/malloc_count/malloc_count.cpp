// SPDX-License-Identifier: LGPL-2.1-or-later
// libmalloc_count.so: an LD_PRELOAD library that counts heap calls of a
// process, for the per-frame budget (bench/budget.sh).
//
//   LD_PRELOAD=libmalloc_count.so MALLOC_COUNT_OUT=counts.jsonl PROGRAM ...
//
// Counts malloc, calloc, realloc, the aligned allocators (posix_memalign,
// aligned_alloc, memalign, valloc, pvalloc), free of a non-null pointer,
// every operator new (plain, array, nothrow, aligned) and every operator
// delete of a non-null pointer. operator new is counted as "new" only: it
// allocates through glibc's own __libc_malloc, not through our malloc.
//
// One JSON line is appended to MALLOC_COUNT_OUT (stderr when unset) when the
// process exits normally, and another each time it gets SIGUSR2 (if the
// program has not claimed SIGUSR2 itself), with "when":"exit" or "signal".
//
// The steady state, two ways:
// * "window": the counts between the process's rxe doorbell number
//   MALLOC_COUNT_WINDOW_FROM (default 1, the first) and its last, with
//   "doorbells" the number of doorbells and "window_doorbells" those in the
//   window. On Soft-RoCE every ibv_post_send ends in rdma-core's rxe
//   provider writing a 32-byte IB_USER_VERBS_CMD_POST_SEND command to the
//   uverbs fd (post_send_db()); this library also wraps write(2) to see
//   those. A sender posts once per frame, a receiver once per credit, so
//   window / (window_doorbells - 1) is per frame, without start-up or
//   tear-down. Not without the stream's opening, from the first doorbell:
//   each end's first is a handshake message (a receiver's ring advert),
//   before the first frame's format is read and the first slots are
//   wrapped; a later MALLOC_COUNT_WINDOW_FROM leaves those out. The window
//   closes at the process's own hang-up (the write of
//   RDMA_USER_CM_CMD_DISCONNECT): the drain marker that tear-down posts
//   after it is a doorbell too, but no frame. (On other devices there are
//   no such writes: the window stays empty.)
// * two runs of different lengths: the difference of the totals over the
//   difference of the frame counts.
// GLib's slice allocator caches memory per thread: run GStreamer with
// G_SLICE=always-malloc so that its allocations show.
//
// MALLOC_COUNT_TRACE=FROM[,COUNT] writes the call stacks of allocations
// from the FROM-th doorbell on: which code makes them (malloc_trace.hpp).
//
// Only glibc's malloc is supported (it exports the __libc_* entry points).
#include "heap_free_text.hpp"
#include "malloc_trace.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <unistd.h>

extern "C" {
ssize_t __write(int, const void*, std::size_t);
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void __libc_free(void*);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {

enum Counter { kMalloc, kCalloc, kRealloc, kAligned, kFree, kNew, kDelete, kCount };
constexpr const char* kNames[kCount] = {"malloc", "calloc", "realloc", "aligned", "free", "new", "delete"};

std::atomic<unsigned long long> g_counts[kCount];
// The counters at the first and at the latest doorbell (see above). Plain
// relaxed copies: a doorbell racing an allocation on another thread may
// land one count on either side, which per frame is noise.
std::atomic<unsigned long long> g_first[kCount], g_last[kCount], g_doorbells;

inline void bump(Counter c) noexcept { g_counts[c].fetch_add(1, std::memory_order_relaxed); }

// An allocation: counted, and its stack written if it is in the trace's window.
inline void allocated(Counter c, std::size_t size) noexcept {
    bump(c);
    malloc_count::trace(kNames[c], size, g_doorbells.load(std::memory_order_relaxed));
}

// Whether a write(2) of n bytes carries a kernel command of `size` bytes
// whose header (uverbs' and rdma_cm's alike: a 32-bit command, then a
// 16-bit input length) says `command` and `in`.
bool is_command(const void* buf, std::size_t n, std::size_t size, std::uint32_t command, std::uint16_t in) noexcept {
    if (n != size || buf == nullptr) return false;
    std::uint32_t c;
    std::uint16_t i;
    std::memcpy(&c, buf, sizeof c);
    std::memcpy(&i, static_cast<const char*>(buf) + 4, sizeof i);
    return c == command && i == in;
}

// rdma-core's struct ibv_post_send: 32 bytes, IB_USER_VERBS_CMD_POST_SEND (28), in_words 8.
bool is_rxe_doorbell(const void* buf, std::size_t n) noexcept { return is_command(buf, n, 32, 28, 8); }

// librdmacm's struct ucma_abi_disconnect: 12 bytes, RDMA_USER_CM_CMD_DISCONNECT
// (10), in 4 (CMA_INIT_CMD).
bool is_disconnect(const void* buf, std::size_t n) noexcept { return is_command(buf, n, 12, 10, 4); }

std::atomic<bool> g_hung_up{false}; // the window is closed (see above)

unsigned long long g_window_from = 1; // the doorbell the window opens at (MALLOC_COUNT_WINDOW_FROM)

void on_doorbell() noexcept {
    if (g_hung_up.load(std::memory_order_relaxed)) return;
    const unsigned long long n = g_doorbells.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n < g_window_from) return;
    for (int i = 0; i < kCount; ++i) {
        const auto v = g_counts[i].load(std::memory_order_relaxed);
        if (n == g_window_from) g_first[i].store(v, std::memory_order_relaxed);
        g_last[i].store(v, std::memory_order_relaxed);
    }
}

// Formatting without the heap or stdio: usable from a signal handler.
struct Line : HeapFreeText<1024> {
    void add_json_string(const char* s) noexcept { // a path: escape what JSON needs
        add("\"");
        for (; *s != '\0' && len < sizeof buf - 8; ++s) {
            if (*s == '"' || *s == '\\') buf[len++] = '\\';
            if (static_cast<unsigned char>(*s) >= 0x20) buf[len++] = *s;
        }
        add("\"");
    }
};

void report(const char* when) noexcept {
    const int saved_errno = errno;
    Line l;
    char exe[512];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    l.add("{\"when\":\"");
    l.add(when);
    l.add("\",\"pid\":");
    l.add(static_cast<unsigned long long>(getpid()));
    l.add(",\"exe\":");
    l.add_json_string(exe);
    if (const char* label = getenv("MALLOC_COUNT_LABEL")) {
        l.add(",\"label\":");
        l.add_json_string(label);
    }
    for (int i = 0; i < kCount; ++i) {
        l.add(",\"");
        l.add(kNames[i]);
        l.add("\":");
        l.add(g_counts[i].load(std::memory_order_relaxed));
    }
    const unsigned long long doorbells = g_doorbells.load(std::memory_order_relaxed);
    l.add(",\"doorbells\":");
    l.add(doorbells);
    l.add(",\"window_from\":");
    l.add(g_window_from);
    l.add(",\"window_doorbells\":");
    l.add(doorbells >= g_window_from ? doorbells - g_window_from + 1 : 0);
    l.add(",\"window\":{");
    for (int i = 0; i < kCount; ++i) {
        if (i > 0) l.add(",");
        l.add("\"");
        l.add(kNames[i]);
        l.add("\":");
        l.add(g_last[i].load(std::memory_order_relaxed) - g_first[i].load(std::memory_order_relaxed));
    }
    l.add("}}\n");
    const char* path = getenv("MALLOC_COUNT_OUT");
    const int fd = path != nullptr ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
    if (fd >= 0) {
        // One write with O_APPEND: lines of concurrent processes do not interleave.
        [[maybe_unused]] const ssize_t w = write(fd, l.buf, l.len);
        if (fd != 2) close(fd);
    }
    errno = saved_errno;
}

extern "C" void on_sigusr2(int) { report("signal"); }

__attribute__((constructor)) void install() {
    if (const char* from = getenv("MALLOC_COUNT_WINDOW_FROM")) {
        g_window_from = std::max(1ull, std::strtoull(from, nullptr, 10));
    }
    malloc_count::trace_init();
    struct sigaction old{};
    if (sigaction(SIGUSR2, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
        struct sigaction sa{};
        sa.sa_handler = on_sigusr2;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR2, &sa, nullptr);
    }
}

__attribute__((destructor)) void at_exit() { report("exit"); }

void* new_or_throw(std::size_t size) {
    allocated(kNew, size);
    for (;;) {
        if (void* p = __libc_malloc(size != 0 ? size : 1)) return p;
        std::new_handler h = std::get_new_handler();
        if (h == nullptr) throw std::bad_alloc();
        h();
    }
}

void* aligned_new_or_throw(std::size_t size, std::align_val_t align) {
    allocated(kNew, size);
    for (;;) {
        if (void* p = __libc_memalign(static_cast<std::size_t>(align), size != 0 ? size : 1)) return p;
        std::new_handler h = std::get_new_handler();
        if (h == nullptr) throw std::bad_alloc();
        h();
    }
}

void counted_delete(void* p) noexcept {
    if (p == nullptr) return;
    bump(kDelete);
    __libc_free(p);
}

} // namespace

extern "C" {

ssize_t write(int fd, const void* buf, std::size_t n) {
    if (is_rxe_doorbell(buf, n)) on_doorbell();
    if (is_disconnect(buf, n)) {
        g_hung_up.store(true, std::memory_order_relaxed);
        malloc_count::trace_stop();
    }
    return __write(fd, buf, n);
}

void* malloc(std::size_t size) {
    allocated(kMalloc, size);
    return __libc_malloc(size);
}

void* calloc(std::size_t n, std::size_t size) {
    allocated(kCalloc, n * size);
    return __libc_calloc(n, size);
}

void* realloc(void* p, std::size_t size) {
    allocated(kRealloc, size);
    return __libc_realloc(p, size);
}

void free(void* p) {
    if (p != nullptr) bump(kFree);
    __libc_free(p);
}

int posix_memalign(void** out, std::size_t align, std::size_t size) {
    allocated(kAligned, size);
    if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
    void* p = __libc_memalign(align, size);
    if (p == nullptr) return ENOMEM;
    *out = p;
    return 0;
}

void* aligned_alloc(std::size_t align, std::size_t size) {
    allocated(kAligned, size);
    return __libc_memalign(align, size);
}

void* memalign(std::size_t align, std::size_t size) {
    allocated(kAligned, size);
    return __libc_memalign(align, size);
}

void* valloc(std::size_t size) {
    allocated(kAligned, size);
    return __libc_memalign(static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), size);
}

void* pvalloc(std::size_t size) {
    allocated(kAligned, size);
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return __libc_memalign(page, (size + page - 1) / page * page);
}

} // extern "C"

void* operator new(std::size_t size) { return new_or_throw(size); }
void* operator new[](std::size_t size) { return new_or_throw(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return new_or_throw(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return new_or_throw(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new(std::size_t size, std::align_val_t a) { return aligned_new_or_throw(size, a); }
void* operator new[](std::size_t size, std::align_val_t a) { return aligned_new_or_throw(size, a); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
    try {
        return aligned_new_or_throw(size, a);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
    try {
        return aligned_new_or_throw(size, a);
    } catch (...) {
        return nullptr;
    }
}

void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_delete(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_delete(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_delete(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { counted_delete(p); }
