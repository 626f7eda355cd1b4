// The receiving end of one stream: owns the ring, hands out frames as they
// complete, takes them back in any order and returns their credits.
//
// Thread rule: one thread drives a FrameReceiver (next/release/stats).
#pragma once

#include "rdmastream/completion_poller.hpp"
#include "rdmastream/rc_connection.hpp"
#include "rdmastream/registered_region.hpp"
#include "rdmastream/slot_credits.hpp"
#include "rdmastream/stream_stats.hpp"
#include "rdmastream/wire.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream {

struct RingConfig {
    std::uint32_t slots = 8;
    std::uint32_t slot_size = 4u << 20; // header included
    PollMode poll_mode = PollMode::kEvent;
    std::string device; // RDMA device by name; empty: the one the route picks
    bool live = false;  // ask the sender to drop frames rather than wait for this receiver
};

// A frame in the ring; valid until release(slot).
struct ReceivedFrame {
    std::uint16_t slot = 0;
    wire::SlotHeader header;
    std::span<const std::byte> payload; // in registered memory, never copied
    std::uint64_t arrived_at_ns = 0;     // wall_clock_ns() when the receiver took it
    // The stream's format (nullptr until the sender announces one), and
    // whether it changed since the previous frame (renegotiate downstream).
    const wire::StreamFormat* format = nullptr;
    bool format_changed = false;
};

class FrameReceiver {
public:
    // Waits for one sender on `listener`, registers the ring on its
    // connection and accepts with the ring advert.
    static std::unique_ptr<FrameReceiver> accept(Listener& listener, const RingConfig& ring,
                                                 std::chrono::milliseconds timeout);
    // Connects to a listening sender, retrying while it is not up yet.
    static std::unique_ptr<FrameReceiver> connect(const Endpoint& sender, const RingConfig& ring,
                                                  std::chrono::milliseconds patience);
    // Registers the ring on `conn` (resolved or requested, not yet connected).
    FrameReceiver(RcConnection conn, const RingConfig& config);
    FrameReceiver(const FrameReceiver&) = delete; // the poller points into the connection
    FrameReceiver& operator=(const FrameReceiver&) = delete;
    // Hangs up before the ring's registration goes: a sender mid-write then
    // learns the receiver left (a disconnect), not a remote access error.
    ~FrameReceiver();

    // The next frame, or nullopt at end of stream (the sender said so).
    // Throws on a failed completion, a protocol violation, the sender going
    // away without ending the stream, or no progress within `timeout`.
    std::optional<ReceivedFrame> next(std::chrono::milliseconds timeout);
    // The consumer is done with a frame: the slot goes back to the sender.
    void release(std::uint16_t slot);

    const StreamStats& stats() const noexcept { return stats_; }
    const RingConfig& ring() const noexcept { return config_; }
    bool huge_pages() const noexcept { return ring_->huge_pages(); }
    // The format the sender announced last, if any.
    const std::optional<wire::StreamFormat>& format() const noexcept { return format_; }

private:
    void post_recv(std::uint64_t wr_id);
    wire::RingAdvertBytes advert() const;
    // A kFormat message in control buffer `buffer`: adopt it, growing the
    // ring first if its frames outgrow the slots.
    void take_format(std::uint64_t buffer, std::uint32_t length);
    void send_control(wire::Control kind, std::span<const std::byte> payload);

    RingConfig config_;
    RcConnection conn_;                   // declared before what lives on its PD
    std::optional<RegisteredRegion> ring_; // replaced when the ring grows
    RegisteredRegion control_in_;          // one kControlPayloadMax buffer per posted receive
    RegisteredRegion control_out_;         // what the receiver's own control messages carry
    CompletionPoller poller_;
    ReceiverSlots slots_;
    StreamStats stats_;
    std::array<ibv_wc, 16> wcs_{};
    std::size_t wc_next_ = 0, wc_count_ = 0;
    std::uint64_t credits_sent_ = 0;
    std::uint32_t signal_every_;
    bool ended_ = false; // the sender sent end of stream
    std::vector<std::uint64_t> recv_of_slot_; // the receive (and buffer) the frame in a slot used
    std::optional<wire::StreamFormat> format_;
    bool format_changed_ = false;
};

} // namespace rdmastream
