// rdma-ring-check: the first end-to-end RDMA check, and the smoke stream.
//
// A receiver registers a ring of slots (LOCAL_WRITE | REMOTE_WRITE only) and
// advertises it in the rdma_cm accept; a sender writes frames into the slots
// with WRITE_WITH_IMM, the immediate carrying slot index and generation. The
// receiver acts on the completion only, then checks the slot order, header
// and every byte, and returns the slot to the sender as a credit
// (SEND_WITH_IMM). Any deviation is an error that names the frame and why.
//
// --fault makes the sender break the protocol on purpose (frame 1) so the
// tests can show that each deviation is caught.
#include "frame_pattern.hpp"

#include "rdmastream/completion_poller.hpp"
#include "rdmastream/error.hpp"
#include "rdmastream/rc_connection.hpp"
#include "rdmastream/registered_region.hpp"
#include "rdmastream/wire.hpp"

#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <vector>

namespace rs = rdmastream;
namespace wire = rdmastream::wire;
namespace check = rdmastream::check;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::string role;
    std::string addr;
    std::uint16_t port = rs::kDefaultPort;
    std::uint32_t slots = 8;
    std::uint32_t slot_size = 256 * 1024;
    std::uint64_t frames = 200;
    std::uint32_t min_payload = 1;
    std::uint32_t max_payload = 0; // 0: fill the slot
    std::string fault = "none";
    double connect_timeout = 60;
    double idle_timeout = 20;
    std::string stats_json;
};

struct Stats {
    std::uint64_t frames = 0;
    std::uint64_t bytes = 0;
    std::uint64_t credit_waits = 0;
    Clock::time_point start = Clock::now();

    void report(const char* verb, const Options& o) const {
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("%s %llu frames, %llu bytes in %.3f s: %.1f frames/s, %.3f Gb/s, %llu credit waits, "
                    "0 copies/frame\n",
                    verb, static_cast<unsigned long long>(frames), static_cast<unsigned long long>(bytes), secs,
                    static_cast<double>(frames) / secs, static_cast<double>(bytes) * 8 / secs / 1e9,
                    static_cast<unsigned long long>(credit_waits));
        std::fflush(stdout);
        if (!o.stats_json.empty()) {
            nlohmann::json j = {{"role", o.role},         {"frames", frames},
                                {"bytes", bytes},         {"seconds", secs},
                                {"fps", static_cast<double>(frames) / secs},
                                {"gbps", static_cast<double>(bytes) * 8 / secs / 1e9},
                                {"credit_waits", credit_waits}, {"copies_per_frame", 0}};
            std::ofstream(o.stats_json) << j.dump(2) << '\n';
        }
    }
};

std::chrono::milliseconds ms(double seconds) { return std::chrono::milliseconds(static_cast<long>(seconds * 1000)); }

void post_empty_recv(ibv_qp* qp, std::uint64_t wr_id) {
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = wr_id; // no SGE: WRITE_WITH_IMM and credit SENDs carry no receive payload
    rs::check_rc(ibv_post_recv(qp, &wr, &bad), "ibv_post_recv");
}

void require_success(const ibv_wc& wc, const char* side) {
    if (wc.status != IBV_WC_SUCCESS) {
        throw std::runtime_error(fmt::format("{}: work completion failed: {}", side, rs::describe_failed_wc(wc)));
    }
}

[[noreturn]] void peer_event(const rs::CmEvent& ev, std::uint64_t done, std::uint64_t total, const char* peer) {
    throw std::runtime_error(fmt::format("{} went away after {} of {} frames: {}", peer, done, total,
                                         rs::describe(ev)));
}

// Signal every k-th send so the send queue drains without a completion per frame.
std::uint32_t signal_interval(std::uint32_t slots) { return std::max<std::uint32_t>(1, slots / 2); }

int run_receiver(const Options& o) {
    rs::Listener listener(rs::Endpoint{o.addr, o.port});
    std::printf("receiver: listening on %s:%u, %u slots of %u bytes\n", o.addr.c_str(), listener.port(), o.slots,
                o.slot_size);
    std::fflush(stdout);
    rs::ConnectionOptions copts;
    copts.recv_wr = o.slots;          // one per write in flight: credits bound them to the slot count
    copts.send_wr = 2 * o.slots + 2;  // credits, signalled every slots/2
    rs::RcConnection conn = listener.wait_request(copts, ms(o.connect_timeout));
    rs::RegisteredRegion ring(conn.pd(), std::size_t{o.slots} * o.slot_size,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    for (std::uint32_t i = 0; i < o.slots; ++i) post_empty_recv(conn.qp(), i);
    const auto advert = wire::encode(wire::RingAdvert{o.slots, o.slot_size, ring.addr(), ring.rkey()});
    conn.accept(advert);
    rs::CompletionPoller poller(conn);
    std::printf("receiver: sender connected%s\n", ring.huge_pages() ? " (ring on huge pages)" : "");
    std::fflush(stdout);

    std::vector<std::uint16_t> generation(o.slots, 0);
    const std::uint32_t max_payload = o.max_payload ? o.max_payload : o.slot_size - static_cast<std::uint32_t>(wire::kSlotHeaderSize);
    const std::uint32_t every = signal_interval(o.slots);
    std::array<ibv_wc, 16> wcs{};
    Stats stats;
    std::uint64_t credits = 0;
    while (stats.frames < o.frames) {
        std::optional<rs::CmEvent> ev;
        const std::size_t n = poller.wait(wcs, ms(o.idle_timeout), ev);
        if (ev) peer_event(*ev, stats.frames, o.frames, "sender");
        if (n == 0) {
            throw std::runtime_error(fmt::format("no frame for {} s after {} of {} frames: is the sender stuck?",
                                                 o.idle_timeout, stats.frames, o.frames));
        }
        for (std::size_t i = 0; i < n; ++i) {
            const ibv_wc& wc = wcs[i];
            require_success(wc, "receiver");
            if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) continue; // a signalled credit SEND
            const std::uint64_t seq = stats.frames;
            const wire::SlotImm imm = wire::decode_slot_imm(ntohl(wc.imm_data), o.slots);
            if (imm.generation != generation[imm.slot]) {
                throw rs::ProtocolError(fmt::format("frame {}: slot {} generation {}, expected {}: stale or "
                                                    "forged immediate",
                                                    seq, imm.slot, imm.generation, generation[imm.slot]));
            }
            if (imm.slot != check::frame_slot(seq, o.slots)) {
                throw rs::ProtocolError(fmt::format("frame {} arrived in slot {}, expected slot {}", seq, imm.slot,
                                                    check::frame_slot(seq, o.slots)));
            }
            const auto slot = ring.bytes().subspan(std::size_t{imm.slot} * o.slot_size, o.slot_size);
            const wire::SlotHeader h = wire::decode_slot_header(slot, imm);
            if (h.sequence != seq) {
                throw rs::ProtocolError(fmt::format("slot {} holds frame {}, expected frame {}", imm.slot,
                                                    h.sequence, seq));
            }
            const std::uint32_t want = check::frame_size(seq, o.min_payload, max_payload);
            if (h.payload_size != want || wc.byte_len != wire::kSlotHeaderSize + want) {
                throw rs::ProtocolError(fmt::format("frame {}: payload {} bytes, write {} bytes, expected {}",
                                                    seq, h.payload_size, wc.byte_len, want));
            }
            const auto payload = slot.subspan(wire::kSlotHeaderSize, h.payload_size);
            if (const std::size_t at = check::first_mismatch(payload, seq); at != payload.size()) {
                throw rs::ProtocolError(fmt::format("frame {} (slot {}): payload differs from what was sent at "
                                                    "byte {} of {}",
                                                    seq, imm.slot, at, payload.size()));
            }
            ++generation[imm.slot];
            ++stats.frames;
            stats.bytes += h.payload_size;
            // Give the slot back: a fresh receive first, then the credit.
            post_empty_recv(conn.qp(), imm.slot);
            ibv_send_wr wr{};
            ibv_send_wr* bad = nullptr;
            wr.wr_id = imm.slot;
            wr.opcode = IBV_WR_SEND_WITH_IMM;
            wr.imm_data = htonl(wire::encode(wire::SlotImm{imm.slot, generation[imm.slot]}));
            wr.send_flags = (++credits % every == 0) ? IBV_SEND_SIGNALED : 0;
            rs::check_rc(ibv_post_send(conn.qp(), &wr, &bad), "ibv_post_send(credit)");
        }
    }
    stats.report("receiver: received and verified", o);
    // The sender disconnects once it holds every credit again.
    if (auto ev = conn.events().next(ms(o.idle_timeout)); !ev || ev->type != RDMA_CM_EVENT_DISCONNECTED) {
        std::fprintf(stderr, "receiver: sender did not disconnect cleanly (%s)\n",
                     ev ? rs::describe(*ev).c_str() : "timed out");
        return 1;
    }
    return 0;
}

int run_sender(const Options& o) {
    rs::ConnectionOptions copts;
    copts.recv_wr = o.slots + 1; // one credit per slot can be in flight
    copts.send_wr = 2 * o.slots + 2;
    rs::RcConnection conn = rs::connect_with_retry(
        rs::Endpoint{o.addr, o.port}, copts, ms(o.connect_timeout),
        [&](rs::RcConnection& c) {
            for (std::uint32_t i = 0; i < copts.recv_wr; ++i) post_empty_recv(c.qp(), i);
        },
        {});
    const wire::RingAdvert ring = wire::decode_ring_advert(conn.peer_private_data());
    const std::uint32_t room = ring.slot_size - static_cast<std::uint32_t>(wire::kSlotHeaderSize);
    const std::uint32_t max_payload = o.max_payload ? o.max_payload : room;
    if (max_payload > room || o.min_payload > max_payload) {
        throw rs::UserError(fmt::format("frames of {}..{} bytes do not fit the receiver's {}-byte slots", o.min_payload,
                                        max_payload, ring.slot_size));
    }
    std::printf("sender: connected, receiver offers %u slots of %u bytes\n", ring.slot_count, ring.slot_size);
    std::fflush(stdout);
    // A staging area shaped like the remote ring: frame for slot s is built at s.
    rs::RegisteredRegion src(conn.pd(), std::size_t{ring.slot_count} * ring.slot_size, IBV_ACCESS_LOCAL_WRITE);
    rs::CompletionPoller poller(conn);

    std::vector<std::uint16_t> generation(ring.slot_count, 0);
    std::vector<bool> have_credit(ring.slot_count, true);
    std::uint32_t credits_held = ring.slot_count;
    const std::uint32_t every = signal_interval(ring.slot_count);
    std::array<ibv_wc, 16> wcs{};
    Stats stats;
    auto pump = [&](std::uint64_t sent) { // handle one batch of completions or fail
        std::optional<rs::CmEvent> ev;
        const std::size_t n = poller.wait(wcs, ms(o.idle_timeout), ev);
        if (ev) peer_event(*ev, sent, o.frames, "receiver");
        if (n == 0) {
            throw std::runtime_error(fmt::format("no credit for {} s after {} of {} frames: is the receiver stuck?",
                                                 o.idle_timeout, sent, o.frames));
        }
        for (std::size_t i = 0; i < n; ++i) {
            require_success(wcs[i], "sender");
            if (wcs[i].opcode != IBV_WC_RECV) continue; // a signalled write
            const wire::SlotImm c = wire::decode_slot_imm(ntohl(wcs[i].imm_data), ring.slot_count);
            if (have_credit[c.slot] || c.generation != generation[c.slot]) {
                throw rs::ProtocolError(fmt::format("receiver returned slot {} (generation {}) that it does "
                                                    "not hold",
                                                    c.slot, c.generation));
            }
            have_credit[c.slot] = true;
            ++credits_held;
            post_empty_recv(conn.qp(), wcs[i].wr_id);
        }
    };

    for (std::uint64_t seq = 0; seq < o.frames; ++seq) {
        const std::uint32_t s = check::frame_slot(seq, ring.slot_count);
        if (!have_credit[s]) ++stats.credit_waits;
        while (!have_credit[s]) pump(seq);
        const std::uint32_t size = check::frame_size(seq, o.min_payload, max_payload);
        const auto slot = src.bytes().subspan(std::size_t{s} * ring.slot_size, ring.slot_size);
        wire::SlotImm imm{static_cast<std::uint16_t>(s), generation[s]};
        wire::encode(wire::SlotHeader{seq, static_cast<std::int64_t>(seq), 1, size, 0, imm},
                     slot.first<wire::kSlotHeaderSize>());
        check::fill(slot.subspan(wire::kSlotHeaderSize, size), seq);

        const bool faulty = seq == 1 && o.fault != "none";
        std::uint32_t rkey = ring.rkey;
        if (faulty && o.fault == "wrong-rkey") rkey ^= 0x00ff00ffu;
        if (faulty && o.fault == "wrong-imm") imm.slot = static_cast<std::uint16_t>(ring.slot_count);
        if (faulty && o.fault == "stale-generation") imm.generation = static_cast<std::uint16_t>(imm.generation + 1);
        if (faulty && o.fault == "corrupt-payload") slot[wire::kSlotHeaderSize + size / 2] ^= std::byte{0x01};

        ibv_sge sge{src.addr() + std::uint64_t{s} * ring.slot_size,
                    static_cast<std::uint32_t>(wire::kSlotHeaderSize) + size, src.lkey()};
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.wr_id = seq;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = htonl(wire::encode(imm));
        wr.send_flags = ((seq + 1) % every == 0 || faulty) ? IBV_SEND_SIGNALED : 0;
        wr.wr.rdma.remote_addr = ring.addr + std::uint64_t{s} * ring.slot_size;
        wr.wr.rdma.rkey = rkey;
        rs::check_rc(ibv_post_send(conn.qp(), &wr, &bad), "ibv_post_send(RDMA_WRITE_WITH_IMM)");
        have_credit[s] = false;
        --credits_held;
        ++generation[s];
        ++stats.frames;
        stats.bytes += size;
    }
    // Every credit back means the receiver verified every frame.
    while (credits_held < ring.slot_count) pump(o.frames);
    stats.report("sender: sent", o);
    conn.disconnect();
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"rdma-ring-check: stream checked frames through an RDMA slot ring (WRITE_WITH_IMM) and verify "
                 "every byte, slot and immediate on arrival.\nRun a receiver, then a sender pointing at it."};
    app.add_option("--role", o.role, "receiver (listens) or sender (connects)")
        ->required()
        ->check(CLI::IsMember({"receiver", "sender"}));
    app.add_option("--addr", o.addr, "receiver: address to listen on (empty: all); sender: receiver's address");
    app.add_option("--port", o.port, "rdma_cm port")->capture_default_str();
    app.add_option("--slots", o.slots, "ring slots (receiver)")->check(CLI::Range(1u, wire::kMaxSlots))
        ->capture_default_str();
    app.add_option("--slot-size", o.slot_size, "bytes per slot, 64-byte header included (receiver)")
        ->check(CLI::Range(static_cast<std::uint32_t>(wire::kSlotHeaderSize + 1), 1u << 30))
        ->capture_default_str();
    app.add_option("--frames", o.frames, "frames to stream")->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--min-payload", o.min_payload, "smallest frame payload in bytes")->capture_default_str();
    app.add_option("--max-payload", o.max_payload, "largest frame payload in bytes (0: fill the slot)")
        ->capture_default_str();
    app.add_option("--fault", o.fault, "sender: break frame 1 on purpose, to prove the receiver notices")
        ->check(CLI::IsMember({"none", "wrong-rkey", "wrong-imm", "stale-generation", "corrupt-payload"}))
        ->capture_default_str();
    app.add_option("--connect-timeout", o.connect_timeout, "seconds to wait for the peer")->capture_default_str();
    app.add_option("--idle-timeout", o.idle_timeout, "seconds without progress before giving up")
        ->capture_default_str();
    app.add_option("--stats-json", o.stats_json, "write final stats as JSON to this file");
    CLI11_PARSE(app, argc, argv);
    if (o.role == "sender" && o.addr.empty()) {
        std::fprintf(stderr, "rdma-ring-check: the sender needs --addr (the receiver's address)\n");
        return 2;
    }
    try {
        return o.role == "receiver" ? run_receiver(o) : run_sender(o);
    } catch (const rs::UserError& e) {
        std::fprintf(stderr, "rdma-ring-check %s: %s\n", o.role.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdma-ring-check %s: error: %s\n", o.role.c_str(), e.what());
        return 1;
    }
}
