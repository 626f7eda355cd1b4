// SPDX-License-Identifier: LGPL-2.1-or-later
// A frame as a program sees it: what a sender gives with its payload
// (FrameMeta), what a receiver finds with it (ReceivedFrame), and the flag
// bits both carry.
#pragma once

#include "rdmastream/clock_anchor.hpp"
#include "rdmastream/format.hpp"
#include "rdmastream/side_data.hpp"

#include <cstdint>
#include <functional>
#include <span>

namespace rdmastream {

// Frame flags (FrameMeta::flags, FrameHeader::flags), the GStreamer buffer
// flags of the same names. Other bits are reserved: a sender may not set
// them (UserError) and a receiver refuses a frame that has them.
inline constexpr std::uint16_t kFrameDiscont = 1u << 0;   // a break in the stream before this frame
inline constexpr std::uint16_t kFrameDeltaUnit = 1u << 1; // not decodable alone (not a keyframe)
inline constexpr std::uint16_t kFrameHeader = 1u << 2;    // carries codec headers
inline constexpr std::uint16_t kFrameCorrupted = 1u << 3; // the source says its data may be damaged
inline constexpr std::uint16_t kFrameFlagsDefined = 0x000f;

// Times are in nanoseconds on the sender's stream clock; kNoTime (no_time.hpp): none.
struct FrameMeta {
    std::int64_t pts = 0;
    std::int64_t duration = 0;
    std::uint16_t flags = 0;
    // Per-frame data to write after the payload (copied at send(); the
    // format must declare room for it: StreamFormat::max_side_data).
    std::span<const SideData> side_data;
    // The flow it belongs to (StreamFormat::flow); its format announced.
    std::uint8_t flow = 0;
};

// What became of a frame a sender was given: the receiver has it, or the
// live policy (or a fan-out with nobody to take it) dropped it. Either way
// its memory is the caller's again.
enum class FrameFate { kDelivered, kDropped };
using FrameDoneFn = std::function<void(std::uint64_t cookie, FrameFate fate)>;

// What came with a received frame, checked: its number counts every frame
// the sender was offered (a gap is what its live policy dropped).
struct FrameHeader {
    std::uint64_t sequence = 0;
    std::int64_t pts = 0;
    std::int64_t duration = 0;
    std::uint32_t payload_size = 0;
    std::uint16_t flags = 0;
    std::uint16_t format_id = 0; // the StreamFormat it is in
    // The sender's wall clock (CLOCK_REALTIME, ns since the epoch) when it
    // posted the frame; 0: not given. Only for one-way latency, and only
    // meaningful where both clocks are synchronised (PTP, NTP, the test bed).
    std::uint64_t sent_at_ns = 0;
    // The flow it belongs to; sequence, format_id and format are the flow's.
    std::uint8_t flow = 0;
};

// A frame in the receiver's ring; valid until the receiver's release(slot).
struct ReceivedFrame {
    std::uint16_t slot = 0;
    FrameHeader header;
    std::span<const std::byte> payload; // in registered memory, never copied
    std::uint64_t arrived_at_ns = 0;     // wall clock when the receiver took it
    // The stream's format (nullptr until the sender announces one), and
    // whether it changed since the previous frame (renegotiate downstream).
    const StreamFormat* format = nullptr;
    bool format_changed = false;
    // Which absolute instant its pts 0 is (nullptr until the sender says).
    const ClockAnchor* clock = nullptr;
    // Its per-frame data, checked, in the ring after the payload (never
    // copied); valid until release(slot) as the payload is.
    std::span<const SideData> side_data;
};

} // namespace rdmastream
