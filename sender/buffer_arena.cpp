// SPDX-License-Identifier: LGPL-2.1-or-later
#include "buffer_arena.hpp"

namespace rdmastream::cli {

std::shared_ptr<BufferArena> BufferArena::create(const MemoryDomain& domain, std::size_t chunk_size,
                                                 std::size_t count) {
    return std::shared_ptr<BufferArena>(new BufferArena(domain, chunk_size, count));
}

BufferArena::BufferArena(const MemoryDomain& domain, std::size_t chunk_size, std::size_t count)
    : memory_(domain.allocate(chunk_size * count)), chunk_size_(chunk_size), chunks_(count) {
    free_.reserve(count);
    for (std::size_t i = count; i-- > 0;) {
        chunks_[i].arena = this;
        chunks_[i].index = static_cast<std::uint32_t>(i);
        free_.push_back(static_cast<std::uint32_t>(i));
    }
}

AVBufferRef* BufferArena::take() {
    std::lock_guard lock(mu_);
    if (free_.empty()) {
        return nullptr;
    }
    Chunk& c = chunks_[free_.back()];
    // av_buffer_create makes FFmpeg's small AVBuffer/AVBufferRef pair: the
    // one allocation per frame on this path, and it is FFmpeg's.
    AVBufferRef* ref = av_buffer_create(reinterpret_cast<std::uint8_t*>(chunk(c.index).data()), chunk_size_,
                                        &BufferArena::give_back, &c, 0);
    if (ref != nullptr) {
        free_.pop_back();
        c.hold = shared_from_this();
    }
    return ref;
}

void BufferArena::give_back(void* opaque, std::uint8_t*) noexcept {
    Chunk* c = static_cast<Chunk*>(opaque);
    std::shared_ptr<BufferArena> last; // may be the arena's last owner: it dies after the unlock
    {
        std::lock_guard lock(c->arena->mu_);
        last = std::move(c->hold);
        c->arena->free_.push_back(c->index);
    }
}

std::span<std::byte> BufferArena::chunk_of(const void* p) const noexcept {
    const auto base = memory_.bytes();
    const auto* b = static_cast<const std::byte*>(p);
    if (b < base.data() || b >= base.data() + base.size()) {
        return {};
    }
    return chunk(static_cast<std::size_t>(b - base.data()) / chunk_size_);
}

std::span<std::byte> BufferArena::chunk(std::size_t index) const noexcept {
    return memory_.bytes().subspan(index * chunk_size_, chunk_size_);
}

} // namespace rdmastream::cli
