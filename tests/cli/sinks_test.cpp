// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmarecv's outputs driven without a connection: frames in slot-like
// buffers with padded strides go through -o (y4m, mkv raw, ffv1) and --gst,
// are read back with FFmpeg and compared byte for byte; every slot an
// output kept must come back through the release queue exactly once, and
// --gst must allocate nothing per frame.
#include "audio_convert.hpp"
#include "gst_sink.hpp"
#include "rdmastream_gst/side_data_bytes.hpp"
#include "overlay_text.hpp"
#include "output_sink.hpp"
#include "slot_release_queue.hpp"
#include "stream_layout.hpp"

#include "rdmastream_cli/ff_ptr.hpp"
#include "rdmastream_cli/raw_caps.hpp"

#include "rdmastream/error.hpp"
#include "wire/wire.hpp"

extern "C" {
#include <libavutil/imgutils.h>
}

#include <gst/app/gstappsink.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace cli = rdmastream::cli;
using rdmastream::ReceivedFrame;
using rdmastream::wire::StreamFormat;

namespace {

constexpr int kW = 64, kH = 48, kFrames = 6;
constexpr std::uint32_t kSlots = 4;

// I420 64x48 in a padded layout (stride 80, gaps between planes), or packed.
StreamFormat i420_format(bool padded) {
    StreamFormat f;
    f.id = 1;
    f.plane_count = 3;
    f.caps = "video/x-raw,format=I420,width=64,height=48,framerate=25/1,pixel-aspect-ratio=1/1";
    if (padded) {
        f.planes[0] = {16, 80};
        f.planes[1] = {16 + 80 * 48 + 64, 48};
        f.planes[2] = {16 + 80 * 48 + 64 + 48 * 24 + 32, 48};
        f.max_frame_size = f.planes[2].offset + 48 * 24;
    } else {
        f.planes[0] = {0, 64};
        f.planes[1] = {64 * 48, 32};
        f.planes[2] = {64 * 48 + 32 * 24, 32};
        f.max_frame_size = 64 * 48 * 3 / 2;
    }
    return f;
}

// The visible bytes of frame n, packed (what FFmpeg's decode gives back).
std::vector<std::uint8_t> picture(int n) {
    std::vector<std::uint8_t> p(kW * kH * 3 / 2);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint8_t>((i * 7 + static_cast<std::size_t>(n) * 31) & 0xff);
    return p;
}

// Frame n laid out as `f` says, padding filled with junk.
std::vector<std::byte> slot_payload(const StreamFormat& f, int n) {
    std::vector<std::byte> out(f.max_frame_size, std::byte{0xee});
    const auto pic = picture(n);
    const int rows[3] = {kH, kH / 2, kH / 2}, widths[3] = {kW, kW / 2, kW / 2};
    std::size_t src = 0;
    for (int p = 0; p < 3; ++p) {
        for (int r = 0; r < rows[p]; ++r) {
            std::memcpy(out.data() + f.planes[p].offset + static_cast<std::size_t>(r) * f.planes[p].stride, pic.data() + src,
                        static_cast<std::size_t>(widths[p]));
            src += static_cast<std::size_t>(widths[p]);
        }
    }
    return out;
}

struct Fed {
    std::vector<bool> kept;
    std::vector<std::uint16_t> slot; // per frame
    std::vector<int> returned;       // per slot
};

// Feeds `frames` frames as a sender would: each into the next slot it has
// a credit for (round robin, skipping slots the output still holds),
// handing freed slots back as rdmarecv's loop does (collect_freed, then
// drain). `in_step`: each frame's slot comes back before the next frame is
// sent (an output that keeps up). No free slot within a bound fails the
// test (a stall) instead of hanging it.
// Frame n's side data (none by default).
using SideDataOf = std::function<std::span<const rdmastream::SideData>(int n)>;

Fed feed(cli::FrameSink& sink, cli::SlotReleaseQueue& q, const StreamFormat& f, int frames = kFrames,
         bool in_step = false, const SideDataOf& side_data = {}) {
    constexpr auto kPatience = std::chrono::seconds(10);
    Fed fed{{}, {}, std::vector<int>(kSlots, 0)};
    const cli::StreamLayout stream = cli::read_stream_layout(f, "the test"); // as the receive loop reads it
    // As the receive loop starts a one-flow programme.
    sink.start_programme(1u << f.flow);
    EXPECT_TRUE(sink.takes(stream));
    sink.start_format(stream);
    sink.programme_ready();
    // One block, like the ring: a slot's frames land at the same address.
    std::vector<std::byte> ring(std::size_t{kSlots} * f.max_frame_size);
    std::vector<bool> busy(kSlots, false);
    auto take_back = [&] {
        sink.collect_freed();
        q.drain([&](std::uint16_t r) { busy[r] = false; ++fed.returned[r]; });
    };
    auto free_slot = [&](std::uint32_t from) -> int {
        for (std::uint32_t k = 0; k < kSlots; ++k) {
            if (!busy[(from + k) % kSlots]) return static_cast<int>((from + k) % kSlots);
        }
        return -1;
    };
    std::uint32_t next = 0;
    for (int n = 0; n < frames; ++n) {
        const auto deadline = std::chrono::steady_clock::now() + kPatience;
        while (free_slot(next) < 0 && std::chrono::steady_clock::now() < deadline) take_back(); // the output gives one back
        if (free_slot(next) < 0) {
            ADD_FAILURE() << "frame " << n << ": the output holds every slot (the sender would stall)";
            break;
        }
        const auto s = static_cast<std::uint16_t>(free_slot(next));
        next = (s + 1u) % kSlots;
        const std::span<std::byte> slot(ring.data() + std::size_t{s} * f.max_frame_size, f.max_frame_size);
        const auto payload = slot_payload(f, n);
        std::copy(payload.begin(), payload.end(), slot.begin());
        ReceivedFrame fr;
        fr.slot = s;
        fr.header.sequence = static_cast<std::uint64_t>(n);
        fr.header.pts = n * 40'000'000LL;
        fr.header.duration = 40'000'000LL;
        fr.payload = slot;
        if (side_data) fr.side_data = side_data(n);
        const bool done = sink.consume(fr);
        fed.kept.push_back(!done);
        fed.slot.push_back(s);
        busy[s] = !done;
        while (in_step && busy[s] && std::chrono::steady_clock::now() < deadline) take_back();
        if (in_step && busy[s]) {
            ADD_FAILURE() << "frame " << n << ": slot " << s << " did not come back before the next frame";
            break;
        }
    }
    sink.finish();
    take_back();
    return fed;
}

// Decodes `path` and returns each frame's visible bytes, packed.
std::vector<std::vector<std::uint8_t>> decode(const std::string& path, std::vector<std::int64_t>* pts = nullptr) {
    AVFormatContext* raw = nullptr;
    EXPECT_EQ(avformat_open_input(&raw, path.c_str(), nullptr, nullptr), 0) << path;
    cli::InputContextPtr in(raw);
    EXPECT_GE(avformat_find_stream_info(in.get(), nullptr), 0);
    const AVStream* st = in->streams[0];
    const AVCodec* dec = avcodec_find_decoder(st->codecpar->codec_id);
    cli::CodecContextPtr ctx(avcodec_alloc_context3(dec));
    avcodec_parameters_to_context(ctx.get(), st->codecpar);
    EXPECT_EQ(avcodec_open2(ctx.get(), dec, nullptr), 0);
    auto pkt = cli::make_packet();
    auto frame = cli::make_frame();
    std::vector<std::vector<std::uint8_t>> out;
    auto take = [&] {
        while (avcodec_receive_frame(ctx.get(), frame.get()) == 0) {
            std::vector<std::uint8_t> b(static_cast<std::size_t>(
                av_image_get_buffer_size(static_cast<AVPixelFormat>(frame->format), frame->width, frame->height, 1)));
            av_image_copy_to_buffer(b.data(), static_cast<int>(b.size()), frame->data, frame->linesize,
                                    static_cast<AVPixelFormat>(frame->format), frame->width, frame->height, 1);
            out.push_back(std::move(b));
            if (pts) pts->push_back(av_rescale_q(frame->best_effort_timestamp, st->time_base, AVRational{1, 25}));
        }
    };
    while (av_read_frame(in.get(), pkt.get()) >= 0) {
        avcodec_send_packet(ctx.get(), pkt.get());
        av_packet_unref(pkt.get());
        take();
    }
    avcodec_send_packet(ctx.get(), nullptr);
    take();
    return out;
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("rdmarecv_sinks_test_" + name)).string();
}

void expect_pictures(const std::string& path, bool check_pts = true) {
    std::vector<std::int64_t> pts;
    const auto frames = decode(path, &pts);
    ASSERT_EQ(frames.size(), static_cast<std::size_t>(kFrames)) << path;
    for (int n = 0; n < kFrames; ++n) {
        EXPECT_EQ(frames[static_cast<std::size_t>(n)], picture(n)) << path << " frame " << n;
        if (check_pts) {
            EXPECT_EQ(pts[static_cast<std::size_t>(n)], n) << path << " frame " << n;
        }
    }
}

void expect_all_returned(const Fed& fed) {
    std::vector<int> kept(kSlots, 0);
    for (std::size_t n = 0; n < fed.kept.size(); ++n) kept[fed.slot[n]] += fed.kept[n];
    EXPECT_EQ(fed.returned, kept) << "slots handed back, per slot";
}

} // namespace

TEST(OutputSink, Y4mReadsTheSlotInPlace) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("a.y4m");
    cli::OutputSink sink(path, "", q);
    const Fed fed = feed(sink, q, i420_format(true));
    EXPECT_EQ(sink.copies(0), 0u);
    expect_all_returned(fed);
    expect_pictures(path);
}

TEST(OutputSink, MkvRawPaddedLayoutCopiesOnce) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("b.mkv");
    cli::OutputSink sink(path, "", q);
    feed(sink, q, i420_format(true));
    EXPECT_EQ(sink.copies(0), static_cast<std::uint64_t>(kFrames));
    expect_pictures(path);
}

TEST(OutputSink, NutRawPackedLayoutNoCopy) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("c.nut");
    cli::OutputSink sink(path, "", q);
    feed(sink, q, i420_format(false));
    EXPECT_EQ(sink.copies(0), 0u);
    expect_pictures(path);
}

TEST(OutputSink, Ffv1EncoderHandsSlotsBack) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("d.mkv");
    cli::OutputSink sink(path, "ffv1", q);
    const Fed fed = feed(sink, q, i420_format(true));
    expect_all_returned(fed);
    expect_pictures(path);
}

TEST(OutputSink, Libx264Encodes) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("e.mp4");
    cli::OutputSink sink(path, "libx264", q);
    const Fed fed = feed(sink, q, i420_format(true));
    expect_all_returned(fed);
    EXPECT_EQ(decode(path).size(), static_cast<std::size_t>(kFrames)); // lossy: count only
}

// -o's PCM holds the decoder's samples bit for bit: planar into the same
// format interleaved is a move (a -0.0 stays -0.0), unpositioned or not.
TEST(AudioConverter, InterleavesPlanarSamplesBitForBit) {
    cli::RawAudioCaps caps;
    caps.format = AV_SAMPLE_FMT_FLTP;
    caps.rate = 48000;
    caps.channels = 6;
    caps.channel_mask = 0; // unpositioned, as a 5.1(side) layout GStreamer orders otherwise goes
    constexpr int kSamples = 4;
    std::vector<float> planar(6 * kSamples);
    for (std::size_t i = 0; i < planar.size(); ++i) planar[i] = static_cast<float>(i) * 0.25f;
    planar[3] = -0.0f;     // channel 0, sample 3
    planar[kSamples] = -0.0f; // channel 1, sample 0
    cli::AudioConverter c;
    c.configure(caps, AV_SAMPLE_FMT_FLT, planar.size() * sizeof(float), "the test");
    const auto out = c.convert(std::as_bytes(std::span(planar)));
    ASSERT_EQ(out.size(), planar.size() * sizeof(float));
    for (int s = 0; s < kSamples; ++s) {
        for (int ch = 0; ch < 6; ++ch) {
            const float want = planar[static_cast<std::size_t>(ch * kSamples + s)];
            EXPECT_EQ(std::memcmp(out.data() + (s * 6 + ch) * sizeof(float), &want, sizeof want), 0)
                << "sample " << s << " channel " << ch;
        }
    }
}

TEST(OutputSink, RefusesRawInMp4WithTheFix) {
    cli::SlotReleaseQueue q(kSlots);
    try {
        cli::OutputSink sink(temp_path("f.mp4"), "", q);
        FAIL() << "mp4 took raw video";
    } catch (const rdmastream::UserError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot hold raw video: give --codec"), std::string::npos) << e.what();
    }
}

// The burned-in text: frame number, pts and the one-way latency from the
// sender's timestamp; a frame arriving "before" it was sent (clocks apart)
// shows no latency rather than a wrong one.
TEST(OverlayText, FrameNumberPtsAndLatency) {
    rdmastream::ReceivedFrame f;
    f.header.sequence = 42;
    f.header.pts = 1'500'000'000;
    f.header.sent_at_ns = 1'000'000'000;
    f.arrived_at_ns = 1'012'500'000;
    std::array<char, 96> buf{};
    EXPECT_EQ(cli::overlay_text(f, buf), "frame 42, pts 1.500 s, latency 12.5 ms");
    f.arrived_at_ns = 999'000'000;
    EXPECT_EQ(cli::overlay_text(f, buf), "frame 42, pts 1.500 s");
    std::array<char, 8> tiny{};
    EXPECT_EQ(cli::overlay_text(f, tiny), "frame 4"); // cut short, still NUL-terminated
    EXPECT_EQ(tiny[7], '\0');
}

TEST(GstSink, OverlayNamedRdmastats) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("g.y4m");
    cli::GstSink sink("textoverlay name=rdmastats ! videoconvert ! video/x-raw,format=Y444 ! y4menc ! filesink buffer-mode=unbuffered location=" + path, q);
    const Fed fed = feed(sink, q, i420_format(true));
    for (bool k : fed.kept) EXPECT_TRUE(k);
    expect_all_returned(fed);
    // textoverlay draws on the picture: count the frames only here.
    EXPECT_EQ(decode(path).size(), static_cast<std::size_t>(kFrames));
}

// A programme's flow N comes out of an appsrc named flowN wherever the
// description links from flowN. (made for it, so the description parses);
// a flow a stream cannot have is refused by name.
TEST(GstSink, AFlowReferenceMakesItsAppsrc) {
    cli::SlotReleaseQueue q(kSlots);
    cli::GstSink sink("fakesink flow1. ! fakesink flow3. ! queue ! fakesink", q);
    GstElement* one = gst_bin_get_by_name(GST_BIN(sink.pipeline()), "flow1");
    GstElement* three = gst_bin_get_by_name(GST_BIN(sink.pipeline()), "flow3");
    ASSERT_NE(one, nullptr);
    ASSERT_NE(three, nullptr);
    EXPECT_STREQ(G_OBJECT_TYPE_NAME(one), "GstAppSrc");
    EXPECT_EQ(gst_bin_get_by_name(GST_BIN(sink.pipeline()), "flow2"), nullptr);
    gst_object_unref(one);
    gst_object_unref(three);
    try {
        cli::GstSink bad("fakesink flow99. ! fakesink", q);
        FAIL() << "flow99 taken";
    } catch (const rdmastream::UserError& e) {
        EXPECT_NE(std::string(e.what()).find("flow99: a stream has flows 0 to"), std::string::npos) << e.what();
    }
}

// y4menc ignores GstVideoMeta (it writes the buffer as the caps lay it out);
// videoconvert honours it: I420 -> YV12 -> I420 (plane swaps, lossless)
// gives back the picture in GStreamer's own layout, bit for bit, which
// proves the offsets and strides arrived.
TEST(GstSink, PicturesArriveIntactThroughVideoMeta) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("h.y4m");
    cli::GstSink sink("videoconvert ! video/x-raw,format=YV12 ! videoconvert ! video/x-raw,format=I420 ! y4menc ! filesink "
                      "buffer-mode=unbuffered location=" + path, q);
    const Fed fed = feed(sink, q, i420_format(true));
    expect_all_returned(fed);
    expect_pictures(path, false); // y4m has no timestamps
}

// Once every slot has carried a frame, --gst allocates nothing per frame:
// each slot's GstMemory and the buffer shells (with their GstVideoMeta) are
// re-used. A shell comes home just after its slot, so the loop may once find
// none free and make one more than there are slots: a bound, not a rate.
// No copy either: fakesink keeps one frame (its last sample), 2 of the 4
// slots may be lent (the default copy threshold), and frames waiting in
// appsrc's queue are not the pipeline's.
TEST(GstSink, AllocatesNothingPerFrameOnceEverySlotWasUsed) {
    constexpr int kMany = 200;
    cli::SlotReleaseQueue q(kSlots);
    cli::GstSink sink("fakesink sync=false", q);
    const Fed fed = feed(sink, q, i420_format(true), kMany);
    ASSERT_EQ(fed.kept.size(), static_cast<std::size_t>(kMany));
    expect_all_returned(fed);
    EXPECT_EQ(sink.slot_buffers().memories_made(), kSlots);
    EXPECT_LE(sink.slot_buffers().shells_made(), kSlots + 1);
    EXPECT_EQ(sink.copies(0), 0u);
}

// A pipeline that keeps up (each frame's slot back before the next frame)
// gets every frame in its slot: the copy threshold costs nothing then.
TEST(GstSink, APipelineThatKeepsUpGetsEveryFrameInItsSlot) {
    cli::SlotReleaseQueue q(kSlots);
    cli::GstSink sink("fakesink sync=false enable-last-sample=false", q, 2); // keeps no buffer
    const Fed fed = feed(sink, q, i420_format(true), 50, true);
    ASSERT_EQ(fed.kept.size(), 50u);
    for (bool k : fed.kept) EXPECT_TRUE(k);
    expect_all_returned(fed);
    EXPECT_EQ(sink.copies(0), 0u);
}

// A pipeline that holds every frame (a queue that lets none through before
// it has them all, as a muxer waiting for a keyframe would) gets the first
// ones in their slots, until only the copy threshold (2 of 4) would be left
// to the sender; the rest are copied as they leave appsrc and their slots
// handed back at once, so the stream goes on (without the copies, the 5th
// frame would wait for a slot forever: feed() fails). Every picture
// arrives intact, in order.
TEST(GstSink, APipelineHoldingEveryFrameCostsCopiesNotAStall) {
    cli::SlotReleaseQueue q(kSlots);
    const auto path = temp_path("held.y4m");
    cli::GstSink sink("queue max-size-buffers=100 max-size-bytes=0 max-size-time=0 min-threshold-buffers=" +
                          std::to_string(kFrames) + " ! videoconvert ! video/x-raw,format=YV12 ! videoconvert ! "
                          "video/x-raw,format=I420 ! y4menc ! filesink buffer-mode=unbuffered location=" + path,
                      q, 2);
    const Fed fed = feed(sink, q, i420_format(true));
    for (bool k : fed.kept) EXPECT_TRUE(k); // appsrc takes every frame in its slot; the copy is made after
    EXPECT_EQ(sink.copies(0), static_cast<std::uint64_t>(kFrames - 2));
    expect_all_returned(fed);
    expect_pictures(path, false);
}

// A pipeline that is slow rather than holding (it plays the frames at their
// timestamps, 25 per second, so they wait in appsrc's queue) keeps the
// frames in their slots: the sender waits for credits (here: feed() waits
// for a free slot), memory does not fill with copies.
TEST(GstSink, ASlowPipelineSlowsTheSenderDownWithoutCopies) {
    cli::SlotReleaseQueue q(kSlots);
    cli::GstSink sink("fakesink sync=true", q);
    const Fed fed = feed(sink, q, i420_format(true), 10);
    ASSERT_EQ(fed.kept.size(), 10u);
    expect_all_returned(fed);
    EXPECT_EQ(sink.copies(0), 0u);
}

// rdmarecv --gst hands a frame's side data on as rdmasrc does: captions and
// timecode as metas on its buffer (frames copied out of their slots, once
// the appsink holds all it may, keep them too), HDR metadata in the caps.
TEST(GstSink, SideDataBecomesMetasAndCaps) {
    cli::SlotReleaseQueue q(kSlots);
    cli::GstSink sink("appsink name=out sync=false", q, 2);
    GstVideoMasteringDisplayInfo md{};
    md.display_primaries[0] = {34000, 16000};
    md.white_point = {15635, 16450};
    md.max_display_mastering_luminance = 10000000;
    md.min_display_mastering_luminance = 1;
    const auto md_bytes = rdmastream::gst::encode_mastering(md);
    std::vector<std::array<std::byte, 6>> cc(kFrames);
    std::vector<std::array<std::byte, 4>> tc(kFrames);
    std::vector<std::array<rdmastream::SideData, 3>> side(kFrames);
    for (int n = 0; n < kFrames; ++n) {
        const auto i = static_cast<std::size_t>(n);
        cc[i] = {std::byte{0xfc}, std::byte(0x40 + n), std::byte{0x80}, std::byte{0xfd}, std::byte{0x80}, std::byte{0x80}};
        tc[i] = rdmastream::gst::le32(0x00030201u | static_cast<std::uint32_t>(n) << 24); // 01:02:03:n
        side[i][0] = {rdmastream::SideDataKind::kCaptions, cc[i]};
        side[i][1] = {rdmastream::SideDataKind::kTimecode, tc[i]};
        side[i][2] = {rdmastream::SideDataKind::kMasteringDisplay, md_bytes};
    }
    // Every sample kept (so the pipeline holds its slots: copies from the 3rd frame on).
    GstElement* out = gst_bin_get_by_name(GST_BIN(sink.pipeline()), "out");
    ASSERT_NE(out, nullptr);
    std::vector<GstSample*> samples;
    GstAppSinkCallbacks callbacks{};
    callbacks.new_sample = [](GstAppSink* appsink, gpointer all) {
        static_cast<std::vector<GstSample*>*>(all)->push_back(gst_app_sink_pull_sample(appsink));
        return GST_FLOW_OK;
    };
    gst_app_sink_set_callbacks(GST_APP_SINK(out), &callbacks, &samples, nullptr);
    feed(sink, q, i420_format(true), kFrames, false,
         [&](int n) { return std::span<const rdmastream::SideData>(side[static_cast<std::size_t>(n)]); });
    EXPECT_GT(sink.copies(0), 0u);
    ASSERT_EQ(samples.size(), static_cast<std::size_t>(kFrames));
    for (int n = 0; n < kFrames; ++n) {
        GstSample* sample = samples[static_cast<std::size_t>(n)];
        GstBuffer* b = gst_sample_get_buffer(sample);
        const GstVideoCaptionMeta* m = gst_buffer_get_video_caption_meta(b);
        ASSERT_NE(m, nullptr) << "frame " << n;
        EXPECT_EQ(m->caption_type, GST_VIDEO_CAPTION_TYPE_CEA708_RAW);
        ASSERT_EQ(m->size, 6u);
        EXPECT_EQ(std::memcmp(m->data, cc[static_cast<std::size_t>(n)].data(), 6), 0) << "frame " << n;
        const GstVideoTimeCodeMeta* t = gst_buffer_get_video_time_code_meta(b);
        ASSERT_NE(t, nullptr) << "frame " << n;
        EXPECT_EQ(t->tc.hours, 1u);
        EXPECT_EQ(t->tc.minutes, 2u);
        EXPECT_EQ(t->tc.seconds, 3u);
        EXPECT_EQ(t->tc.frames, static_cast<guint>(n));
        GstVideoMasteringDisplayInfo got{};
        EXPECT_TRUE(gst_video_mastering_display_info_from_caps(&got, gst_sample_get_caps(sample))) << "frame " << n;
        EXPECT_TRUE(gst_video_mastering_display_info_is_equal(&got, &md)) << "frame " << n;
    }
    for (GstSample* sample : samples) gst_sample_unref(sample);
    gst_object_unref(out);
}

TEST(GstSink, BadPipelineIsAUserError) {
    cli::SlotReleaseQueue q(kSlots);
    EXPECT_THROW(cli::GstSink("nosuchelement ! fakesink", q), rdmastream::UserError);
}
