// SPDX-License-Identifier: LGPL-2.1-or-later
#include "decoder_pool.hpp"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <utility>

namespace rdmastream::cli {
namespace {

constexpr std::size_t kPlaneAlign = 64; // the largest STRIDE_ALIGN FFmpeg builds with (AVX-512)
constexpr std::size_t kOverread = 16;   // decoders may touch this far past a plane (as the default allocator pads)

// How many pictures a decoder may hold besides ours: a full H.264/HEVC
// reference list, the reorder delay, and one per frame thread.
std::size_t decoder_reserve(const AVCodecContext* ctx) { return 16 + 4 + static_cast<std::size_t>(std::max(ctx->thread_count, 1)); }

std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

} // namespace

void DecoderPool::bind(MemoryDomain domain, std::size_t held_downstream) {
    std::lock_guard lock(mu_);
    domain_ = std::move(domain);
    held_ = held_downstream;
}

bool DecoderPool::attach(AVCodecContext* ctx, const AVCodec* codec) {
    if (!(codec->capabilities & AV_CODEC_CAP_DR1)) {
        return false; // the decoder allocates its own pictures: they take the copy path
    }
    ctx->opaque = this;
    ctx->get_buffer2 = &DecoderPool::get_buffer2;
    return true;
}

int DecoderPool::get_buffer2(AVCodecContext* ctx, AVFrame* frame, int flags) {
    auto* self = static_cast<DecoderPool*>(ctx->opaque);
    try {
        return self->fill(ctx, frame, flags);
    } catch (...) {
        std::lock_guard lock(self->mu_);
        self->error_ = std::current_exception();
        return AVERROR(ENOMEM);
    }
}

int DecoderPool::fill(AVCodecContext* ctx, AVFrame* frame, int flags) {
    const auto* desc = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame->format));
    if (desc == nullptr || (desc->flags & (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_PAL))) {
        return avcodec_default_get_buffer2(ctx, frame, flags); // not a picture we can send as is
    }
    std::lock_guard lock(mu_);
    if (!domain_) {
        return avcodec_default_get_buffer2(ctx, frame, flags); // not connected yet
    }
    if (frame->format != format_ || frame->width != width_ || frame->height != height_) {
        cut_arena(ctx, *frame);
    }
    AVBufferRef* buf = arena_->take();
    if (buf == nullptr) {
        return avcodec_default_get_buffer2(ctx, frame, flags); // every chunk is out: this one gets copied
    }
    frame->buf[0] = buf;
    for (std::size_t i = 0; i < 4; ++i) {
        frame->data[i] = linesize_[i] > 0 ? buf->data + offset_[i] : nullptr;
        frame->linesize[i] = linesize_[i];
    }
    frame->extended_data = frame->data;
    return 0;
}

void DecoderPool::cut_arena(AVCodecContext* ctx, const AVFrame& frame) {
    const auto fmt = static_cast<AVPixelFormat>(frame.format);
    // The same steps as avcodec_default_get_buffer2: align the dimensions
    // the way this decoder needs, then widen until every stride is aligned.
    int w = frame.width, h = frame.height;
    std::array<int, AV_NUM_DATA_POINTERS> stride_align{};
    avcodec_align_dimensions2(ctx, &w, &h, stride_align.data());
    std::array<int, 4> linesize{};
    for (bool unaligned = true; unaligned;) {
        if (av_image_fill_linesizes(linesize.data(), fmt, w) < 0) {
            throw std::runtime_error("av_image_fill_linesizes refused the decoder's picture size");
        }
        w += w & ~(w - 1); // next try: the next power-of-two multiple
        unaligned = false;
        for (std::size_t i = 0; i < 4; ++i) {
            unaligned |= stride_align[i] > 0 && linesize[i] % stride_align[i] != 0;
        }
    }
    std::array<ptrdiff_t, 4> lines{};
    std::copy(linesize.begin(), linesize.end(), lines.begin());
    std::array<std::size_t, 4> sizes{};
    if (av_image_fill_plane_sizes(sizes.data(), fmt, h, lines.data()) < 0) {
        throw std::runtime_error("av_image_fill_plane_sizes refused the decoder's picture size");
    }
    std::size_t at = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        offset_[i] = at;
        at += sizes[i] > 0 ? align_up(sizes[i] + kOverread + kPlaneAlign - 1, kPlaneAlign) : 0;
    }
    if (arena_) {
        std::erase_if(retired_, [](const auto& old) { return old.expired(); });
        retired_.push_back(arena_);
    }
    arena_ = BufferArena::create(*domain_, align_up(at, 4096), held_ + decoder_reserve(ctx));
    linesize_ = linesize;
    format_ = fmt;
    width_ = frame.width;
    height_ = frame.height;
}

std::optional<DecoderPool::InPlace> DecoderPool::locate(const AVFrame& f) {
    if (f.buf[0] == nullptr || f.buf[1] != nullptr) {
        return std::nullopt;
    }
    std::lock_guard lock(mu_);
    auto try_arena = [&f](const BufferArena& a) -> std::optional<InPlace> {
        const auto chunk = a.chunk_of(f.buf[0]->data);
        if (chunk.empty()) return std::nullopt;
        for (std::size_t i = 0; i < 4 && f.data[i] != nullptr; ++i) {
            const auto* p = reinterpret_cast<const std::byte*>(f.data[i]);
            if (f.linesize[i] <= 0 || p < chunk.data() || p >= chunk.data() + chunk.size()) return std::nullopt;
        }
        return InPlace{chunk, &a.memory()};
    };
    if (arena_) {
        if (auto r = try_arena(*arena_)) return r;
    }
    for (const auto& weak : retired_) {
        if (const auto a = weak.lock()) {
            if (auto r = try_arena(*a)) return r;
        }
    }
    return std::nullopt;
}

void DecoderPool::rethrow_pending() {
    std::exception_ptr e;
    {
        std::lock_guard lock(mu_);
        e = std::exchange(error_, nullptr);
    }
    if (e) std::rethrow_exception(e);
}

} // namespace rdmastream::cli
