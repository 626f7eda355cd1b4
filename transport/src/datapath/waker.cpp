// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/waker.hpp"

#include "rdmastream/error.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace rdmastream {

static_assert(std::atomic<bool>::is_always_lock_free, "wake() must be async-signal-safe");

Waker::Waker() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) {
        throw SystemError("eventfd", errno);
    }
}

Waker::~Waker() { ::close(fd_); }

void Waker::wake() noexcept {
    woken_.store(true);
    if (sleeping_.load()) {
        const std::uint64_t one = 1;
        // Can only fail with EAGAIN when the counter is near 2^64: then the
        // fd is readable anyway. errno is saved for signal handlers' sake.
        const int saved = errno;
        [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
        errno = saved;
    }
}

bool Waker::sleep_begin() noexcept {
    sleeping_.store(true);
    if (woken_.load()) {
        sleeping_.store(false);
        return false;
    }
    return true;
}

void Waker::sleep_end(bool fd_ready) noexcept {
    sleeping_.store(false);
    if (fd_ready) {
        std::uint64_t count = 0;
        // Non-blocking: a wake written after poll(2) returned stays for the
        // next sleep, which then returns at once (one spurious wake-up).
        [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof count);
    }
}

Readiness wait_readable(int fd, Waker& waker, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (waker.take()) {
            return Readiness::kWoken;
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return Readiness::kTimedOut;
        }
        if (!waker.sleep_begin()) {
            continue;
        }
        pollfd fds[2] = {{fd, POLLIN, 0}, {waker.fd(), POLLIN, 0}};
        const int rc = ::poll(fds, 2, static_cast<int>(left.count()));
        const int err = errno;
        waker.sleep_end((fds[1].revents & POLLIN) != 0);
        if (rc < 0 && err != EINTR) {
            throw SystemError("poll", err);
        }
        if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
            return Readiness::kReadable;
        }
    }
}

} // namespace rdmastream
