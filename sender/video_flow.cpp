// SPDX-License-Identifier: LGPL-2.1-or-later
#include "video_flow.hpp"
#include "decoder_pool.hpp"

#include "rdmastream_cli/raw_caps.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <fmt/format.h>

#include <cstdio>

namespace rdmastream::cli {

VideoFlow::VideoFlow(SendContext& ctx, std::uint8_t flow, const StreamDecoder& stream, DecoderPool* pool,
                     const VideoOptions& options)
    : ctx_(ctx), flow_(flow), stream_(stream), pool_(pool), options_(options), frames_(ctx.tx, flow, ctx.fanout) {
    ctx_.counters.flows[flow_].kind = "video";
    if (flow_ == 0) size_frames(); // flow 0's slots come with the connection; another's with its first format
}

void VideoFlow::size_frames() {
    frames_.size_to_depth();
    // The decoder's pool is cut to match: it holds no more than the table keeps out.
    if (pool_ != nullptr) pool_->bind(ctx_.tx.memory(), frames_.size());
}

// The stream's path is its first flow's (a programme's: its video's).
void VideoFlow::set_path(const char* path) noexcept {
    if (flow_ == 0) ctx_.counters.path = path;
}

void VideoFlow::release() noexcept {
    sws_.reset();
    frames_.release_arena();
}

bool VideoFlow::needs_conversion(const AVFrame& picture) const noexcept {
    return options_.target != AV_PIX_FMT_NONE && options_.target != static_cast<AVPixelFormat>(picture.format);
}

// The payload of a picture the decoder wrote into a registered chunk: it
// costs nothing to offer. nullopt when rdmasend must write it (a copy or a
// conversion).
std::optional<Payload> VideoFlow::payload_of_decoded(const AVFrame& picture) {
    if (options_.force_copy || needs_conversion(picture) || pool_ == nullptr) return std::nullopt;
    const auto in_place = pool_->locate(picture);
    return in_place ? payload_in_place(picture, in_place->chunk, *in_place->memory) : std::nullopt;
}

PayloadLayout VideoFlow::written_layout_of(const AVFrame& picture) const {
    const auto format = needs_conversion(picture) ? options_.target : static_cast<AVPixelFormat>(picture.format);
    return written_layout(format, picture.width, picture.height);
}

// Converts (--pix-fmt) or copies the picture into the entry's registered chunk.
Payload VideoFlow::write_picture(const AVFrame& picture, std::size_t entry, const PayloadLayout& layout) {
    const auto src_fmt = static_cast<AVPixelFormat>(picture.format);
    const auto chunk = frames_.written_chunk(entry, layout.size, ctx_.idle);
    FrameCounters& c = ctx_.counters;
    if (needs_conversion(picture)) {
        sws_.reset(sws_getCachedContext(sws_.release(), picture.width, picture.height, src_fmt, picture.width,
                                        picture.height, options_.target, SWS_BICUBIC, nullptr, nullptr, nullptr));
        if (!sws_) {
            throw UserError(fmt::format("--pix-fmt {}: libswscale cannot convert {} to it", options_.pix_fmt,
                                        av_get_pix_fmt_name(src_fmt)));
        }
        convert_picture(sws_.get(), picture, chunk, layout);
        ++c.converted;
        set_path("decoder -> libswscale into a registered buffer (one conversion)");
    } else {
        copy_picture(picture, chunk, layout);
        ++c.copied;
        set_path(options_.force_copy ? "decoder -> one copy into a registered buffer (--no-zero-copy)"
                 : stream_.zero_copy_capable() && pool_ != nullptr
                     ? "decoder -> one copy into a registered buffer (the decoder's pool was exhausted or the "
                       "picture was not in it)"
                     : "decoder -> one copy into a registered buffer (the decoder cannot use caller buffers: no "
                       "DR1, or it is not the first video stream)");
    }
    return Payload{chunk.first(layout.size), &frames_.written_memory(), layout};
}

void VideoFlow::announce(const PayloadLayout& layout, AVRational sar) {
    RawVideoCaps caps;
    caps.format = layout.format;
    caps.width = layout.width;
    caps.height = layout.height;
    caps.framerate = stream_.frame_rate();
    caps.pixel_aspect_ratio = sar;
    StreamFormat f;
    f.id = static_cast<std::uint16_t>(format_id_ % 0xffff + 1);
    ++format_id_;
    f.flow = flow_;
    f.max_frame_size = layout.size;
    f.max_side_data = kDefaultSideDataBytes; // captions, timecode, HDR metadata: frame_side_data.hpp
    f.planes = layout.planes;
    f.plane_count = layout.plane_count;
    f.caps = to_caps_string(caps);
    ctx_.tx.set_format(f, ctx_.idle);
    announced_ = layout;
    if (format_id_ > 1) ++ctx_.counters.format_changes;
    std::fprintf(stderr, "rdmasend: flow %u format %u: %s, %u-byte frames\n", flow_, f.id, f.caps.c_str(),
                 f.max_frame_size);
    if (!frames_.sized()) size_frames();
}

void VideoFlow::announce_layout(const PayloadLayout& layout, AVRational sar) {
    if (!announced_ || !same_layout(*announced_, layout)) announce(layout, sar);
}

void VideoFlow::announce_for(const AVFrame& picture, AVRational sar) {
    const std::optional<Payload> decoded = payload_of_decoded(picture);
    announce_layout(decoded ? decoded->layout : written_layout_of(picture), sar);
}

// The live policy decides before anything is written. A frame the
// transport cannot post at once would become its pending frame, to be
// dropped when the next one comes: a copy (or conversion) for nothing,
// once per decoded frame while the receiver lags. So a frame that needs
// writing and finds no free slot is dropped here, unwritten, and the next
// one gets the slot that comes home. Keeping the newest picture (a
// reference) pending here instead, to write it once a slot is free, would
// cost more code for little: unpaced, the next picture is decoded at once;
// paced, the connection is serviced when the pacer wakes, at the next
// picture's due time (or every 100 ms below 10 frames/s), and that picture
// is newer. A picture decoded in place costs nothing to offer: the
// transport's own live policy handles it as before. Either way the
// receiver sees the drop as a gap in the frame numbers.
void VideoFlow::send(AVFrame* picture, FrameMeta meta, AVRational sar) {
    ++ctx_.counters.flows[flow_].frames;
    const std::optional<Payload> decoded = payload_of_decoded(*picture);
    if (!decoded && frames_.sized() && !ctx_.tx.takes_frame_now(flow_)) {
        ctx_.tx.skip_frame(flow_);
        return;
    }
    // The format first: a flow's first one makes its slots (and its table).
    const PayloadLayout layout = decoded ? decoded->layout : written_layout_of(*picture);
    announce_layout(layout, sar);
    // Its side data moves with the picture's reference (the same buffers)
    // and is copied by the transport at send().
    meta.flow = flow_;
    meta.side_data = side_data_.of(*picture);
    const std::size_t entry = frames_.take_entry(ctx_.idle);
    Payload p;
    if (decoded) {
        // The picture moves into the entry: its chunk stays out of the decoder's reuse until on_done.
        av_frame_move_ref(frames_.entry(entry).picture.get(), picture);
        ++ctx_.counters.zero_copy;
        set_path("decoder -> registered pool (zero-copy)");
        p = *decoded;
    } else {
        p = write_picture(*picture, entry, layout);
        ++ctx_.counters.flows[flow_].copied;
    }
    ctx_.tell_clock(meta.pts);
    frames_.send(entry, *p.memory, p.bytes, meta, ctx_.idle);
}

} // namespace rdmastream::cli
