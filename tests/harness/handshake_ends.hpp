// SPDX-License-Identifier: LGPL-2.1-or-later
// The real handshake (wire/handshake.hpp) on both ends of a MemoryFabric,
// each on its own thread as two processes would run it, then the stream
// ends over the connection: what connect/accept make over rdma_cm. The
// hellos, which rdma_cm carries in its private data, are handed over
// directly. And RawPeer, a peer written by hand, for the hostile ends.
// Shared by auth_test.cpp (key proofs) and join_test.cpp (joins).
#pragma once

#include "memory_fabric.hpp"

#include "rdmastream/key.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/frame_sender.hpp"
#include "wire/handshake.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rdmastream::harness {

inline std::shared_ptr<const PresharedKey> key_of(char c) {
    const std::vector<std::byte> bytes(32, std::byte(static_cast<unsigned char>(c)));
    return PresharedKey::from_bytes(bytes, std::string("key-") + c);
}

inline RingConfig ring_with(std::shared_ptr<const PresharedKey> key) {
    RingConfig r;
    r.slots = 4;
    r.slot_size = 4096 + wire::kSlotHeaderSize;
    r.key = std::move(key);
    r.memory_windows = true; // the window keys travel after the proofs too
    return r;
}

inline SenderOptions sender_with(std::shared_ptr<const PresharedKey> key) {
    SenderOptions o;
    o.key = std::move(key);
    return o;
}

// One connection's two ends, through their handshakes or refused.
struct Ends {
    MemoryFabric fabric;
    std::unique_ptr<FrameReceiver> rx; // end 0
    std::unique_ptr<FrameSender> tx;   // end 1: declared last, goes first
    std::string rx_error, tx_error;
    // A founding connection's (run_ends with keep_secrets): each end's
    // session secret, from its own Handshake.
    std::shared_ptr<const SessionSecret> rx_secret, tx_secret;
    std::vector<std::byte> rx_hello, tx_hello; // as each end sent it
};

// Runs the two handshakes made over `e.fabric`'s ends (each takes the
// other's hello, labelled `rx_peer`, `tx_peer`, as its peer), then makes
// the receiver (it announces its ring) and the sender. A failed end's
// error is kept and its connection hung up.
inline void run_ends(Ends& e, std::unique_ptr<Datapath> rx_path, std::unique_ptr<Handshake> rxh,
                     std::unique_ptr<Datapath> tx_path, std::unique_ptr<Handshake> txh, const RingConfig& ring,
                     const SenderOptions& opts, bool keep_secrets = false,
                     const std::string& rx_peer = "198.18.0.2:40000", const std::string& tx_peer = "198.18.0.1:18515") {
    using namespace std::chrono_literals;
    // What each end's rdma_cm message would carry (each end drops its
    // Handshake when through, so copies).
    e.rx_hello.assign(rxh->hello().begin(), rxh->hello().end());
    e.tx_hello.assign(txh->hello().begin(), txh->hello().end());
    std::thread receiver([&] {
        try {
            rxh->take_peer_hello(e.tx_hello, rx_peer);
            rxh->run(2s);
            if (keep_secrets) e.rx_secret = rxh->session_secret();
            rxh.reset();
            e.rx = std::make_unique<FrameReceiver>(std::move(rx_path), ring);
            e.rx->announce_ring();
        } catch (const std::exception& ex) {
            e.rx_error = ex.what();
            rxh.reset();
            rx_path->disconnect();
        }
    });
    try {
        txh->take_peer_hello(e.rx_hello, tx_peer);
        txh->run(2s);
        if (keep_secrets) e.tx_secret = txh->session_secret();
        const wire::RingAdvert ring_got = txh->ring();
        txh.reset();
        e.tx = std::make_unique<FrameSender>(std::move(tx_path), ring_got, opts);
    } catch (const std::exception& ex) {
        e.tx_error = ex.what();
        txh.reset();
        tx_path->disconnect();
    }
    receiver.join();
}

// Sends `n` frames and checks each arrives intact, then the end of stream.
inline void stream_frames(Ends& e, int n) {
    using namespace std::chrono_literals;
    RegisteredRegion mem = e.tx->register_memory(4096, 0);
    std::thread consumer([&] {
        for (int i = 0; i < n; ++i) {
            auto f = e.rx->next(5s);
            ASSERT_TRUE(f.has_value());
            EXPECT_EQ(f->header.sequence, static_cast<std::uint64_t>(i));
            ASSERT_EQ(f->payload.size(), 100u);
            EXPECT_EQ(f->payload[0], std::byte(static_cast<unsigned char>(i)));
            e.rx->release(f->slot);
        }
        EXPECT_FALSE(e.rx->next(5s).has_value()); // end of stream
    });
    for (int i = 0; i < n; ++i) {
        mem.bytes()[0] = std::byte(static_cast<unsigned char>(i));
        e.tx->send(mem.bytes().first(100), mem.lkey(), {}, static_cast<std::uint64_t>(i), 5s);
        e.tx->wait_done(static_cast<std::uint64_t>(i), 5s);
    }
    e.tx->finish(5s);
    consumer.join();
}

// A handshake run on a thread of its own, as its end runs it (up to 2 s),
// then `then` (the stream end made over it). join() waits for both and
// says what either threw ("" when nothing did); going, it joins too, so a
// failed ASSERT leaves no thread running.
class Running {
public:
    explicit Running(Handshake& h, std::function<void()> then = {})
        : thread_([this, &h, then = std::move(then)] {
              try {
                  h.run(std::chrono::seconds(2));
                  if (then) then();
              } catch (const std::exception& e) {
                  error_ = e.what();
              }
          }) {}
    ~Running() {
        if (thread_.joinable()) thread_.join();
    }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    std::string join() {
        if (thread_.joinable()) thread_.join();
        return error_;
    }

private:
    std::string error_; // before thread_, which writes it
    std::thread thread_;
};

// A peer written by hand: posts receives, sends what it is told to, and
// keeps every message that reaches it.
class RawPeer {
public:
    explicit RawPeer(std::unique_ptr<Datapath> path)
        : path_(std::move(path)), mem_(path_->register_memory(8192, IBV_ACCESS_LOCAL_WRITE)) {
        for (std::uint64_t i = 0; i < 8; ++i) {
            ibv_sge sge{mem_.addr() + i * 512, 512, mem_.lkey()};
            ibv_recv_wr wr{};
            wr.wr_id = i;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            path_->post_recv(wr, "raw peer recv");
        }
    }
    void send(wire::Control kind, std::span<const std::byte> payload) {
        std::memcpy(mem_.bytes().data() + 4096, payload.data(), payload.size());
        ibv_sge sge{mem_.addr() + 4096, static_cast<std::uint32_t>(payload.size()), mem_.lkey()};
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = htonl(wire::encode(kind));
        path_->post_send(wr, "raw peer send");
    }
    // The next message that reaches us within `timeout`: its kind and bytes.
    struct Message {
        wire::Control kind;
        std::vector<std::byte> bytes;
    };
    std::optional<Message> next(std::chrono::milliseconds timeout) {
        std::array<ibv_wc, 1> wc{};
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            Waited w = path_->wait(wc, deadline);
            if (w.kind == Waited::kCmEvent || w.kind == Waited::kTimeout) return std::nullopt;
            if (w.kind != Waited::kCompletions || wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_RECV) {
                continue;
            }
            const auto at = mem_.bytes().subspan(wc[0].wr_id * 512, wc[0].byte_len);
            received_.insert(received_.end(), at.begin(), at.end());
            return Message{static_cast<wire::Control>(ntohl(wc[0].imm_data) >> 16), {at.begin(), at.end()}};
        }
    }
    // Bytes of every message that reached us.
    std::size_t received_bytes() const noexcept { return received_.size(); }
    Datapath& path() { return *path_; }

private:
    std::unique_ptr<Datapath> path_;
    RegisteredRegion mem_;
    std::vector<std::byte> received_;
};

} // namespace rdmastream::harness
