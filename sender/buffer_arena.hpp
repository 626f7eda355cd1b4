// SPDX-License-Identifier: LGPL-2.1-or-later
// Registered memory (one FrameMemory) cut into equal chunks that FFmpeg
// holds as AVBuffers.
//
// A chunk goes back to the arena when FFmpeg drops its last reference to it
// (the decoder's own reference frames count): until then neither the
// decoder nor we reuse it. The free callback may run on any thread (frame
// threads), so the free list takes a lock. Each chunk handed out holds the
// arena alive, so an arena replaced on a resolution change is freed (and
// deregistered) when its last frame goes, on whichever thread that is.
#pragma once

#include "rdmastream/memory.hpp"

extern "C" {
#include <libavutil/buffer.h>
}

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace rdmastream::cli {

class BufferArena : public std::enable_shared_from_this<BufferArena> {
public:
    // Allocates count * chunk_size bytes from `domain` (throws UserError
    // when the memlock limit is too low).
    static std::shared_ptr<BufferArena> create(const MemoryDomain& domain, std::size_t chunk_size, std::size_t count);
    BufferArena(const BufferArena&) = delete;
    BufferArena& operator=(const BufferArena&) = delete;

    // A free chunk wrapped as an AVBuffer, or nullptr when all are out (or
    // av_buffer_create failed). Thread-safe.
    AVBufferRef* take();
    // The chunk `p` lies in, if it is one of ours.
    std::span<std::byte> chunk_of(const void* p) const noexcept;
    // Chunk `index` by number (the copy path addresses chunks directly).
    std::span<std::byte> chunk(std::size_t index) const noexcept;
    // What a send from any chunk names.
    const FrameMemory& memory() const noexcept { return memory_; }
    std::size_t chunk_size() const noexcept { return chunk_size_; }
    std::size_t count() const noexcept { return chunks_.size(); }

private:
    struct Chunk {
        BufferArena* arena = nullptr;
        std::shared_ptr<BufferArena> hold; // set while FFmpeg holds the chunk
        std::uint32_t index = 0;
    };
    BufferArena(const MemoryDomain& domain, std::size_t chunk_size, std::size_t count);
    static void give_back(void* opaque, std::uint8_t* data) noexcept;

    FrameMemory memory_;
    std::size_t chunk_size_;
    std::vector<Chunk> chunks_;
    std::mutex mu_;
    std::vector<std::uint32_t> free_; // capacity reserved: pushing never allocates
};

} // namespace rdmastream::cli
