// SPDX-License-Identifier: LGPL-2.1-or-later
// fuzz_make_seeds DIR: writes the seed corpus, DIR/TARGET/NAME, with the
// project's own encoders, so every seed is a valid message of the current
// protocol. Run after a wire change and commit the files:
//   build-fuzz/tests/fuzz/fuzz_make_seeds tests/fuzz/corpus
#include "fuzz_join.hpp"
#include "wire/side_data_wire.hpp"
#include "wire/wire.hpp"

#include <gst/video/video.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace wire = rdmastream::wire;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::byte>;

fs::path g_root;

void write(const std::string& target, const std::string& name, const Bytes& bytes) {
    const fs::path dir = g_root / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        throw std::runtime_error("cannot write " + (dir / name).string());
    }
}

template <typename Container>
Bytes bytes_of(const Container& c) {
    return Bytes(reinterpret_cast<const std::byte*>(c.data()), reinterpret_cast<const std::byte*>(c.data()) + c.size());
}

Bytes le32(std::uint32_t v) {
    return {std::byte(v & 0xff), std::byte(v >> 8 & 0xff), std::byte(v >> 16 & 0xff), std::byte(v >> 24 & 0xff)};
}
Bytes le16(std::uint16_t v) { return {std::byte(v & 0xff), std::byte(v >> 8 & 0xff)}; }

Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

Bytes format_bytes(const wire::StreamFormat& f) {
    std::array<std::byte, wire::kControlPayloadMax> out{};
    const std::size_t n = wire::encode(f, out);
    return Bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
}

// A raw video format: the caps' own layout (what rdmasink announces for a
// buffer without GstVideoMeta), or with `stride_pad` bytes more per row and
// each plane given the picture's full height (a padded decoder layout).
wire::StreamFormat raw_format(const std::string& caps_text, std::uint32_t stride_pad = 0) {
    GstCaps* caps = gst_caps_from_string(caps_text.c_str());
    GstVideoInfo info;
    if (caps == nullptr || !gst_video_info_from_caps(&info, caps)) {
        throw std::runtime_error("GStreamer cannot read " + caps_text);
    }
    gst_caps_unref(caps);
    wire::StreamFormat f;
    f.id = 1;
    f.caps = caps_text;
    f.plane_count = static_cast<std::uint8_t>(GST_VIDEO_INFO_N_PLANES(&info));
    f.max_frame_size = static_cast<std::uint32_t>(GST_VIDEO_INFO_SIZE(&info));
    f.max_side_data = rdmastream::kDefaultSideDataBytes; // as rdmasend and rdmasink declare
    std::uint32_t at = 0;
    for (std::size_t i = 0; i < f.plane_count; ++i) {
        const auto stride = static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_STRIDE(&info, i));
        if (stride_pad == 0) {
            f.planes[i] = {static_cast<std::uint32_t>(GST_VIDEO_INFO_PLANE_OFFSET(&info, i)), stride};
        } else {
            f.planes[i] = {at, stride + stride_pad};
            at += (stride + stride_pad) * static_cast<std::uint32_t>(GST_VIDEO_INFO_HEIGHT(&info));
            f.max_frame_size = at;
        }
    }
    return f;
}

void wire_seeds() {
    wire::Nonce nonce{};
    for (std::size_t i = 0; i < nonce.size(); ++i) nonce[i] = std::byte(static_cast<unsigned char>(i * 7 + 1));
    write("fuzz_sender_hello", "eight", bytes_of(wire::encode(wire::SenderHello{8, false, nonce})));
    write("fuzz_sender_hello", "max_key", bytes_of(wire::encode(wire::SenderHello{wire::kMaxSlots, true, nonce})));
    write("fuzz_receiver_hello", "eight", bytes_of(wire::encode(wire::ReceiverHello{8, false, nonce})));
    Bytes accept_data = bytes_of(wire::encode(wire::ReceiverHello{4096, true, nonce}));
    accept_data.resize(196); // the IB CM pads private data
    write("fuzz_receiver_hello", "max_key_padded", accept_data);
    // Two paths: a join's echo; join requests (a role byte, then the
    // dialler's 56-byte hello) with the token of fuzz_join.hpp's stream.
    write("fuzz_receiver_hello", "join_echo",
          bytes_of(wire::encode(wire::ReceiverHello{8, false, nonce, {true, true, std::nullopt}})));
    const wire::SessionToken token = rdmastream::fuzz::join_stream()->token();
    write("fuzz_join_hello", "sender_b",
          cat({Bytes{std::byte{0}}, bytes_of(wire::encode(wire::SenderHello{256, false, nonce, {true, true, token}}))}));
    write("fuzz_join_hello", "receiver_a_key",
          cat({Bytes{std::byte{3}}, bytes_of(wire::encode(wire::ReceiverHello{8, true, nonce, {true, false, token}}))}));
    Bytes founding = cat({Bytes{std::byte{0}}, bytes_of(wire::encode(wire::SenderHello{256, false, nonce}))});
    founding.resize(1 + wire::kJoinHelloSize); // a connect request's padding
    write("fuzz_join_hello", "founding_padded", founding);
    wire::KeyProof proof{wire::Role::kSender, {}};
    for (std::size_t i = 0; i < proof.mac.size(); ++i) proof.mac[i] = std::byte(static_cast<unsigned char>(255 - i));
    write("fuzz_key_proof", "sender", bytes_of(wire::encode(proof)));
    proof.role = wire::Role::kReceiver;
    write("fuzz_key_proof", "receiver", bytes_of(wire::encode(proof)));
    // A join proof (two paths): the same layout, its own magic.
    write("fuzz_key_proof", "join_sender", bytes_of(wire::encode(wire::JoinProof{wire::Role::kSender, proof.mac})));

    write("fuzz_reject", "config", bytes_of(wire::encode(wire::Reject{wire::RejectReason::kConfig,
                                                                      "the receiver offers 300 slots"})));
    write("fuzz_reject", "busy", bytes_of(wire::encode(wire::Reject{wire::RejectReason::kBusy, ""})));

    const wire::RingAdvert ring{8, 65536, 0x7f0000001000ull, 0x1234, false};
    write("fuzz_ring_advert", "ring", bytes_of(wire::encode(ring)));
    Bytes padded = bytes_of(wire::encode(wire::RingAdvert{4, 4096, 0x10000, 7, true}));
    padded.resize(196); // the IB CM pads private data
    write("fuzz_ring_advert", "live_padded", padded);
    const wire::RingAdvert windows{3, 8192, 0x7f0000002000ull, 0, false, {0x80000101u, 0x80000201u, 0x80000301u}};
    write("fuzz_ring_advert", "windows", bytes_of(wire::encode(windows)));
    wire::RingAdvert audio{16, 8192, 0x7f0000100000ull, 0x5678, false};
    audio.flow = 1; // a second flow's range, after flow 0's 8 slots
    audio.slot_base = 8;
    write("fuzz_ring_advert", "flow1", bytes_of(wire::encode(audio)));

    write("fuzz_slot_imm", "slot3", cat({le32(wire::encode(wire::SlotImm{3, 7})), le32(8)}));
    write("fuzz_slot_imm", "slot0", cat({le32(wire::encode(wire::SlotImm{0, 65535})), le32(1)}));

    for (auto kind : {wire::Control::kEndOfStream, wire::Control::kKeepalive, wire::Control::kFormat,
                      wire::Control::kRing, wire::Control::kCredits, wire::Control::kAuth, wire::Control::kLeaving,
                      wire::Control::kClock, wire::Control::kJoin}) {
        write("fuzz_control", "kind" + std::to_string(static_cast<int>(kind)), le32(wire::encode(kind)));
    }

    const std::vector<wire::Credit> credits{{{1, 1}, 0x1234}, {{3, 2}, 0x80000102u}, {{0, 9}, 0x80000305u}};
    Bytes payload(credits.size() * wire::kCreditSize);
    wire::encode_credits(credits, payload);
    write("fuzz_credits", "three", cat({le16(8), payload}));
    write("fuzz_credits", "one", cat({le16(1), Bytes(payload.begin(), payload.begin() + wire::kCreditSize)}));

    write("fuzz_stream_format", "i420", format_bytes(raw_format("video/x-raw,format=I420,width=320,height=240,framerate=30/1")));
    wire::StreamFormat opaque;
    opaque.id = 2;
    opaque.max_frame_size = 65536;
    opaque.caps = "video/x-h264,stream-format=byte-stream,alignment=au";
    write("fuzz_stream_format", "opaque", format_bytes(opaque));
    wire::StreamFormat audio_format;
    audio_format.flow = 1;
    audio_format.id = 1;
    audio_format.max_frame_size = 8192;
    audio_format.caps = "audio/x-raw,format=S16LE,layout=interleaved,rate=48000,channels=2,channel-mask=(bitmask)0x3";
    write("fuzz_stream_format", "audio_flow1", format_bytes(audio_format));

    wire::SlotHeader h;
    h.sequence = 41;
    h.pts = 1'000'000;
    h.duration = 33'333'333;
    h.payload_size = 100;
    h.flags = 1;
    h.imm = {2, 5};
    h.format_id = 1;
    h.sent_at_ns = 1'700'000'000'000'000'000ull;
    Bytes slot(wire::kSlotHeaderSize + 128);
    wire::encode(h, std::span(slot).first<wire::kSlotHeaderSize>());
    write("fuzz_slot_header", "frame", cat({le32(wire::encode(h.imm)), slot}));
    h.flow = 1; // a frame of a second flow
    wire::encode(h, std::span(slot).first<wire::kSlotHeaderSize>());
    write("fuzz_slot_header", "flow1", cat({le32(wire::encode(h.imm)), slot}));
    h.flow = 0;
    h.side_data_size = 28; // a frame with captions after its payload
    Bytes with_side(wire::kSlotHeaderSize + 128);
    wire::encode(h, std::span(with_side).first<wire::kSlotHeaderSize>());
    write("fuzz_slot_header", "side_data", cat({le32(wire::encode(h.imm)), with_side}));

    const Bytes cc{std::byte{0xfc}, std::byte{0x94}, std::byte{0x2c}, std::byte{0xfd}, std::byte{0x80}, std::byte{0x80}};
    const Bytes tc{std::byte{0x01}, std::byte{0x02}, std::byte{0x03}, std::byte{0x04}};
    const Bytes md(24, std::byte{0x33});
    const Bytes cll{std::byte{0xe8}, std::byte{0x03}, std::byte{0x90}, std::byte{0x01}};
    const rdmastream::SideData all[] = {{rdmastream::SideDataKind::kCaptions, cc},
                                        {rdmastream::SideDataKind::kTimecode, tc},
                                        {rdmastream::SideDataKind::kMasteringDisplay, md},
                                        {rdmastream::SideDataKind::kContentLight, cll}};
    Bytes block(wire::side_data_size(all));
    wire::encode_side_data(all, block);
    write("fuzz_side_data", "all", block);
    write("fuzz_side_data", "captions", Bytes(block.begin(), block.begin() + 10));
}

void bookkeeping_seeds() {
    // 4 slots: send four frames, release them out of order, send again.
    write("fuzz_slot_credits", "laps", Bytes{std::byte{3}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0},
                                             std::byte{1}, std::byte{2}, std::byte{1}, std::byte{0}, std::byte{0},
                                             std::byte{0}, std::byte{1}, std::byte{1}, std::byte{0}});
    // 2 slots: a forged immediate and a forged credit between honest frames.
    write("fuzz_slot_credits", "forged", cat({Bytes{std::byte{1}, std::byte{0}, std::byte{2}}, le32(0x00010001),
                                              Bytes{std::byte{3}}, le32(0x00010000), Bytes{std::byte{1}, std::byte{0}}}));
}

const char* const kCaps[] = {
    "video/x-raw,format=I420,width=320,height=240,framerate=30/1",
    ("video/x-raw, format=(string)NV12, width=(int)640, height=(int)480, interlace-mode=(string)progressive, "
     "pixel-aspect-ratio=(fraction)1/1, framerate=(fraction)30000/1001"),
    "video/x-raw,format=RGBA,width=160,height=120,framerate=60/1,pixel-aspect-ratio=4/3",
    "video/x-raw,format=I420_10LE,width=1920,height=1080,framerate=0/1,interlace-mode=interleaved",
    "video/x-h264,stream-format=byte-stream,alignment=au",
    // Past findings (tests/unit/raw_caps_test.cpp): text GStreamer does not
    // read as fields, and a number it reads as octal.
    "video/x-raw,format=I420,width=320,height=240,foo=\"x,height=2,y\"",
    "video/x-raw,format=I420,width=320,height=240,s=[sub, height=2, x=y]",
    "video/x-raw,format=RGBA,width=160,height=063",
};

void caps_seeds() {
    for (const char* target : {"fuzz_raw_caps", "fuzz_gst_caps", "fuzz_caps_agree"}) {
        int n = 0;
        for (const char* c : kCaps) {
            write(target, "caps" + std::to_string(n++), bytes_of(std::string(c)));
        }
    }
}

void video_meta_seeds() {
    struct Seed {
        const char* name;
        std::string caps;
        std::uint32_t stride_pad;
        bool recycled;
    };
    const Seed seeds[] = {
        {"i420", "video/x-raw,format=I420,width=320,height=240,framerate=30/1", 0, false},
        {"nv12_padded", "video/x-raw,format=NV12,width=176,height=144", 64, true},
        {"rgba", "video/x-raw,format=RGBA,width=160,height=120", 0, false},
        {"yuy2_padded", "video/x-raw,format=YUY2,width=322,height=242", 32, false},
        {"i420_10le_odd", "video/x-raw,format=I420_10LE,width=323,height=241", 0, true},
        {"v210", "video/x-raw,format=v210,width=64,height=16", 0, false},
    };
    for (const Seed& s : seeds) {
        const wire::StreamFormat f = raw_format(s.caps, s.stride_pad);
        write("fuzz_video_meta", s.name, cat({le32(f.max_frame_size | (s.recycled ? 0x80000000u : 0u)), format_bytes(f)}));
    }
    wire::StreamFormat opaque;
    opaque.id = 3;
    opaque.max_frame_size = 4096;
    opaque.caps = "image/jpeg,width=320,height=240";
    write("fuzz_video_meta", "opaque", cat({le32(1000 | 0x80000000u), format_bytes(opaque)}));
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR (e.g. tests/fuzz/corpus)\n", argv[0]);
        return 2;
    }
    g_root = argv[1];
    gst_init(nullptr, nullptr);
    try {
        wire_seeds();
        bookkeeping_seeds();
        caps_seeds();
        video_meta_seeds();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
