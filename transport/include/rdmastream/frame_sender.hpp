// The sending end of one stream: connects to a receiver, and writes frames
// from the caller's registered memory into ring slots it holds credits for.
//
// Each frame is one WRITE_WITH_IMM with two SGEs: the 64-byte slot header
// from the sender's own small header region, then the caller's payload, in
// place. No copy.
//
// Thread rule: one thread drives a FrameSender.
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
#include <span>
#include <vector>

namespace rdmastream {

struct FrameMeta {
    std::int64_t pts = 0;
    std::int64_t duration = 0;
    std::uint16_t flags = 0;
};

class FrameSender {
public:
    // The largest ring a sender accepts (its queues are sized before the
    // receiver's advert arrives).
    static constexpr std::uint32_t kMaxSlots = 256;

    // Connects, retrying while the receiver is not up yet, for `patience`.
    static std::unique_ptr<FrameSender> connect(const Endpoint& receiver, std::chrono::milliseconds patience);
    // Waits for a receiver to dial in (its ring advert comes with the request).
    static std::unique_ptr<FrameSender> accept(Listener& listener, std::chrono::milliseconds timeout);
    explicit FrameSender(RcConnection conn);
    FrameSender(const FrameSender&) = delete; // the poller points into the connection
    FrameSender& operator=(const FrameSender&) = delete;

    const wire::RingAdvert& ring() const noexcept { return ring_; }
    std::uint32_t max_payload() const noexcept { return ring_.slot_size - std::uint32_t{wire::kSlotHeaderSize}; }
    // Register payload memory here.
    ibv_pd* pd() const noexcept { return conn_.pd(); }

    // Writes one frame, waiting up to `timeout` for a free slot. `payload`
    // must lie in memory registered on pd() with `lkey` and stay unchanged
    // until write_done(returned sequence). Throws UserError if it does not
    // fit a slot.
    std::uint64_t send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                       std::chrono::milliseconds timeout);
    // The write of frame `sequence` has reached the receiver: its payload
    // memory may be reused.
    bool write_done(std::uint64_t sequence) const noexcept { return sequence < done_before_; }
    // Waits (handling completions and credits) until write_done(sequence).
    void wait_done(std::uint64_t sequence, std::chrono::milliseconds timeout);
    // Waits until the receiver has released every frame, sends end of
    // stream, and disconnects.
    void finish(std::chrono::milliseconds timeout);

    const StreamStats& stats() const noexcept { return stats_; }

private:
    void pump(std::chrono::milliseconds timeout); // one batch of completions, or throw
    static constexpr std::uint64_t kEndOfStreamWrId = UINT64_MAX;
    bool eos_posted_ = false;
    bool end_acked_ = false;

    RcConnection conn_;
    wire::RingAdvert ring_;
    RegisteredRegion headers_; // one 64-byte header per slot; lives on conn_'s PD
    CompletionPoller poller_;
    SenderCredits credits_;
    std::vector<std::uint64_t> last_seq_in_slot_;
    std::uint64_t next_seq_ = 0;
    std::uint64_t done_before_ = 0; // every frame below this has reached the receiver
    std::uint32_t signal_every_;
    StreamStats stats_;
    std::array<ibv_wc, 16> wcs_{};
};

} // namespace rdmastream
