// SPDX-License-Identifier: LGPL-2.1-or-later
// Frame memory a sender can write from without a copy: pages registered
// with the RDMA device of the sender's connection(s). A program gets a
// MemoryDomain from its Sender, allocates FrameMemory from it, fills frames
// in place and hands them to Sender::send; it never sees a protection domain
// or a key.
//
// The memory stays valid as long as its FrameMemory, even past the Sender
// (a GStreamer pool's buffers may outlive the stream): the registration it
// lives on is kept until the last FrameMemory of the domain goes.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

namespace rdmastream {

class FrameMemory {
public:
    FrameMemory() noexcept; // none: bytes() is empty
    FrameMemory(FrameMemory&&) noexcept;
    FrameMemory& operator=(FrameMemory&&) noexcept;
    ~FrameMemory(); // deregisters and unmaps

    std::span<std::byte> bytes() const noexcept;
    // Backed by 2 MiB pages (fewer translations for the NIC).
    bool huge_pages() const noexcept;
    explicit operator bool() const noexcept { return impl_ != nullptr; }

    struct Impl;
    const Impl* impl() const noexcept { return impl_.get(); } // the library's own

private:
    friend class MemoryDomain;
    explicit FrameMemory(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

// Where frame memory for one sender is registered. Copies share it.
class MemoryDomain {
public:
    MemoryDomain() noexcept; // none: allocate() throws
    // Maps `size` bytes (2 MiB pages when the size allows and the system has
    // them) and registers them. UserError naming `ulimit -l` when the
    // memory-lock limit is too low.
    FrameMemory allocate(std::size_t size) const;

    struct Impl;
    explicit MemoryDomain(std::shared_ptr<Impl> impl) noexcept; // the library's own

private:
    std::shared_ptr<Impl> impl_;
};

} // namespace rdmastream
