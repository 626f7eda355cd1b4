// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rogue_sender.hpp"

#include "frame_pattern.hpp"

#include "datapath/completion_poller.hpp"
#include "rdmastream/error.hpp"
#include "call_checks.hpp"
#include "memory/registered_region.hpp"
#include "datapath/slot_credits.hpp"
#include "wire/side_data_wire.hpp"
#include "wire/wire.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <vector>

namespace rdmastream::check {
namespace {

// The stream format a format fault announces (id 1), and the payload size
// of its frames; nullopt for the other faults (no format).
struct FormatFault {
    wire::StreamFormat format;
    std::uint32_t frame_bytes = 0;
};
std::optional<FormatFault> format_fault(const std::string& fault) {
    FormatFault f;
    f.format.id = 1;
    f.format.plane_count = 1;
    if (fault == "hostile-layout") {
        f.format.caps = "video/x-raw,format=GRAY8,width=4096,height=4096,framerate=30/1";
        f.format.max_frame_size = 4096;
        f.format.planes[0] = {0, 0x7fffffff};
        f.frame_bytes = 4096;
    } else if (fault == "short-frame") {
        f.format.caps = "video/x-raw,format=GRAY8,width=64,height=64,framerate=30/1";
        f.format.max_frame_size = 4096;
        f.format.planes[0] = {0, 64};
        f.frame_bytes = 100;
    } else if (fault == "audio-ragged") {
        // Stereo S16: 4-byte sample frames; 4094 bytes is 1023.5 of them.
        f.format.caps = "audio/x-raw,format=S16LE,layout=interleaved,rate=48000,channels=2,"
                        "channel-mask=(bitmask)0x0000000000000003";
        f.format.plane_count = 0;
        f.format.max_frame_size = 4096;
        f.frame_bytes = 4094;
    } else if (fault == "huge-frame") {
        f.format.caps = "video/x-raw,format=GRAY8,width=32768,height=32766,framerate=30/1";
        f.format.max_frame_size = (1u << 30) - 64;
        f.format.planes[0] = {0, 32768};
        f.frame_bytes = 4096;
    } else if (fault == "side-data-overrun") {
        // Room for 64 bytes of side data a frame; frame 0 carries 199.
        f.format.caps = "video/x-raw,format=GRAY8,width=64,height=64,framerate=30/1";
        f.format.max_frame_size = 4096;
        f.format.max_side_data = 64;
        f.format.planes[0] = {0, 64};
        f.frame_bytes = 4096;
    } else {
        return std::nullopt;
    }
    return f;
}

} // namespace

int run_rogue_sender(const Endpoint& receiver, const std::string& fault, std::uint64_t frames,
                     std::chrono::milliseconds connect_timeout, std::chrono::milliseconds idle_timeout) {
    ConnectionOptions copts;
    copts.recv_wr = 256;
    copts.send_wr = 256;
    // Protocol 5, no key: our hello in the connect request; the receiver's
    // hello comes back with its accept, its ring advert as its first message.
    auto hello = wire::encode(wire::SenderHello{copts.recv_wr, false, {}});
    if (fault == "bad-hello") {
        hello[0] = std::byte{'X'}; // not our magic: the receiver must refuse, and say why
    }
    // The connection and the buffer the advert lands in (it goes first).
    struct Connected {
        RcConnection conn;
        RegisteredRegion advert_in;
    };
    std::optional<Connected> connected;
    try {
        connected.emplace(retry_connect(receiver, connect_timeout, [&](std::chrono::milliseconds left) {
            RcConnection c = RcConnection::resolve(receiver, within(copts, left));
            RegisteredRegion in(c.pd(), 4096, IBV_ACCESS_LOCAL_WRITE);
            ibv_sge sge{in.addr(), static_cast<std::uint32_t>(in.bytes().size()), in.lkey()}; // with window keys
            ibv_recv_wr wr{};
            ibv_recv_wr* bad = nullptr;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            check_rc(ibv_post_recv(c.qp(), &wr, &bad), "ibv_post_recv(advert)");
            c.connect(hello);
            return Connected{std::move(c), std::move(in)};
        }));
    } catch (const CmEventError& e) {
        const auto why = e.event() ? wire::decode_reject(e.event()->private_bytes()) : std::nullopt;
        throw std::runtime_error(why ? "the receiver refused the connection: " + why->text : e.what());
    }
    RcConnection& conn = connected->conn;
    const wire::ReceiverHello their_hello = wire::decode_receiver_hello(conn.peer_private_data());
    CompletionPoller poller(conn);
    const wire::RingAdvert ring = [&] {
        std::array<ibv_wc, 1> wc{};
        const Waited w = poller.wait(wc, std::chrono::steady_clock::now() + connect_timeout);
        if (w.kind != Waited::kCompletions || wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_RECV ||
            wire::decode_control(ntohl(wc[0].imm_data)) != wire::Control::kRing) {
            throw std::runtime_error("rogue-sender: the receiver's first message is not its ring advert");
        }
        return wire::decode_ring_advert(connected->advert_in.bytes().first(wc[0].byte_len));
    }();
    if (ring.slot_count != their_hello.slot_count) {
        throw std::runtime_error("rogue-sender: the ring advert's slot count differs from the hello's");
    }
    // Receives for the receiver's credit messages (a list of slots each,
    // with the key to write each slot's next frame with).
    const std::size_t credit_room = std::size_t{ring.slot_count} * wire::kCreditSize;
    std::vector<std::uint32_t> slot_rkey(ring.slot_count);
    for (std::uint32_t i = 0; i < ring.slot_count; ++i) slot_rkey[i] = ring.first_rkey(i);
    RegisteredRegion credits_in(conn.pd(), std::size_t{ring.slot_count} * credit_room, IBV_ACCESS_LOCAL_WRITE);
    const auto post_credit_recv = [&](std::uint64_t i) {
        ibv_sge sge{credits_in.addr() + i * credit_room, static_cast<std::uint32_t>(credit_room), credits_in.lkey()};
        ibv_recv_wr wr{};
        ibv_recv_wr* bad = nullptr;
        wr.wr_id = i;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        check_rc(ibv_post_recv(conn.qp(), &wr, &bad), "ibv_post_recv");
    };
    for (std::uint32_t i = 0; i < ring.slot_count; ++i) {
        post_credit_recv(i);
    }
    std::vector<wire::Credit> credit_list(ring.slot_count);
    bool slot1_back = false; // held-slot: the receiver handed frame 1 out and released it
    std::printf("rogue-sender: connected (%s); frame 1 will have fault '%s'\n",
                ring.windows() ? "a memory window per slot" : "one ring key", fault.c_str());
    std::fflush(stdout);
    const std::optional<FormatFault> announced = format_fault(fault);
    if (announced) {
        // The format, as FrameSender::set_format sends it (nothing in
        // flight yet): one SEND_WITH_IMM of kind kFormat.
        RegisteredRegion out(conn.pd(), wire::kControlPayloadMax, 0);
        const std::size_t n = wire::encode(announced->format, out.bytes().first<wire::kControlPayloadMax>());
        ibv_sge sge{out.addr(), static_cast<std::uint32_t>(n), out.lkey()};
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.wr_id = UINT64_MAX;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = htonl(wire::encode(wire::Control::kFormat));
        wr.send_flags = IBV_SEND_SIGNALED;
        check_rc(ibv_post_send(conn.qp(), &wr, &bad), "ibv_post_send(format)");
        std::array<ibv_wc, 1> wc{};
        const Waited w = poller.wait(wc, idle_timeout);
        if (w.completions != 1 || wc[0].status != IBV_WC_SUCCESS) {
            throw std::runtime_error("the receiver did not take the stream format");
        }
        std::printf("rogue-sender: announced stream format 1: %s, max_frame_size %u, plane 0 stride %#x; frames of "
                    "%u bytes follow\n",
                    announced->format.caps.c_str(), announced->format.max_frame_size,
                    announced->format.planes[0].stride, announced->frame_bytes);
        std::fflush(stdout);
    }
    // Staging shaped like the remote ring: header and payload contiguous.
    RegisteredRegion src(conn.pd(), std::size_t{ring.slot_count} * ring.slot_size, IBV_ACCESS_LOCAL_WRITE);
    SenderCredits credits(ring.slot_count);
    std::array<ibv_wc, 16> wcs{};
    const std::uint32_t room = ring.slot_size - static_cast<std::uint32_t>(wire::kSlotHeaderSize);

    // Waits for one batch of completions and takes the credits in it
    // (their slots, generations and window keys); `what` names the wait.
    const auto take_credits = [&](const std::string& what) {
        const Waited w = poller.wait(wcs, idle_timeout);
        if (w.event) throw std::runtime_error(fmt::format("receiver went away {}: {}", what, describe(*w.event)));
        if (w.completions == 0) throw std::runtime_error(fmt::format("no credit {}", what));
        for (std::size_t i = 0; i < w.completions; ++i) {
            if (wcs[i].status != IBV_WC_SUCCESS) {
                throw std::runtime_error(fmt::format("sender: work completion failed: {}", describe_failed_wc(wcs[i])));
            }
            if (wcs[i].opcode == IBV_WC_RECV) {
                const auto bytes = credits_in.bytes().subspan(wcs[i].wr_id * credit_room, wcs[i].byte_len);
                const std::size_t k = wire::decode_credits(bytes, ring.slot_count, credit_list);
                for (std::size_t j = 0; j < k; ++j) {
                    credits.give_back(credit_list[j].imm);
                    slot_rkey[credit_list[j].imm.slot] = credit_list[j].rkey;
                    slot1_back = slot1_back || credit_list[j].imm.slot == 1;
                }
                post_credit_recv(wcs[i].wr_id);
            }
        }
    };
    for (std::uint64_t seq = 0; seq < frames; ++seq) {
        while (credits.available() == 0) {
            take_credits(fmt::format("at frame {}", seq));
        }
        if (fault == "held-slot" && seq == 2) {
            // Frame 0 is in slot 0 and the receiver (--hold-first) holds it:
            // it handed frame 1 out after it, and slot 1's credit is back.
            while (!slot1_back) {
                take_credits("for slot 1");
            }
            // A frame into slot 0 (no credit: the consumer holds it), with
            // the key frame 0 was written with and bytes of its own.
            const wire::SlotImm imm{0, 1};
            const auto slot = src.bytes().first(ring.slot_size);
            const std::uint32_t size = frame_size(seq, 1, room);
            wire::encode(wire::SlotHeader{seq, static_cast<std::int64_t>(seq), 1, size, 0, imm, 0},
                         slot.first<wire::kSlotHeaderSize>());
            std::fill(slot.begin() + wire::kSlotHeaderSize, slot.begin() + wire::kSlotHeaderSize + size,
                      std::byte{0xa5});
            ibv_sge sge{src.addr(), static_cast<std::uint32_t>(wire::kSlotHeaderSize) + size, src.lkey()};
            ibv_send_wr wr{};
            ibv_send_wr* bad = nullptr;
            wr.wr_id = seq;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
            wr.imm_data = htonl(wire::encode(imm));
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.wr.rdma.remote_addr = ring.addr;
            wr.wr.rdma.rkey = ring.first_rkey(0);
            check_rc(ibv_post_send(conn.qp(), &wr, &bad), "ibv_post_send(held slot)");
            std::printf("rogue-sender: wrote frame %llu into slot 0, which the receiver holds, with key %#x\n",
                        static_cast<unsigned long long>(seq), wr.wr.rdma.rkey);
            std::fflush(stdout);
            break;
        }
        wire::SlotImm imm = *credits.take();
        const std::uint32_t size = announced ? announced->frame_bytes : frame_size(seq, 1, room);
        const auto slot = src.bytes().subspan(std::size_t{imm.slot} * ring.slot_size, ring.slot_size);
        const std::uint16_t format_id = announced ? announced->format.id : 0;
        const bool faulty = seq == 1;
        // side-data-overrun: the first frame carries a well-formed block (one
        // caption entry of 65 triplets, 199 bytes) past the format's 64-byte
        // bound (the first: a listener refuses it as a peer and listens on).
        std::uint32_t side = 0;
        if (seq == 0 && fault == "side-data-overrun") {
            const std::vector<std::byte> captions(195, std::byte{0xfc});
            const SideData entry[] = {{SideDataKind::kCaptions, captions}};
            side = static_cast<std::uint32_t>(
                wire::encode_side_data(entry, slot.subspan(wire::kSlotHeaderSize + size)));
        }
        wire::SlotHeader header{seq, static_cast<std::int64_t>(seq), 1, size, 0, imm, format_id};
        header.side_data_size = side;
        wire::encode(header, slot.first<wire::kSlotHeaderSize>());
        fill(slot.subspan(wire::kSlotHeaderSize, size), seq);

        // The slot the credit was for: the write goes there, with its key,
        // whatever the faults below make the immediate say.
        const std::uint16_t target = imm.slot;
        std::uint32_t rkey = slot_rkey[target];
        if (faulty && fault == "wrong-rkey") rkey ^= 0x00ff00ffu;
        if (faulty && fault == "wrong-imm") imm.slot = static_cast<std::uint16_t>(ring.slot_count);
        if (faulty && fault == "stale-generation") imm.generation = static_cast<std::uint16_t>(imm.generation + 1);
        if (faulty && fault == "corrupt-payload") slot[wire::kSlotHeaderSize + size / 2] ^= std::byte{0x01};

        ibv_sge sge{src.addr() + std::uint64_t{target} * ring.slot_size,
                    static_cast<std::uint32_t>(wire::kSlotHeaderSize) + size + side, src.lkey()};
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.wr_id = seq;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = htonl(wire::encode(imm));
        wr.send_flags = IBV_SEND_SIGNALED; // every write: the rogue wants to see its own failure
        wr.wr.rdma.remote_addr = ring.addr + std::uint64_t{target} * ring.slot_size;
        wr.wr.rdma.rkey = rkey;
        check_rc(ibv_post_send(conn.qp(), &wr, &bad), "ibv_post_send");
    }
    // Wait for the outcome: the receiver must refuse frame 1 and go away.
    for (;;) {
        const Waited w = poller.wait(wcs, idle_timeout);
        if (w.event) throw std::runtime_error(fmt::format("receiver went away: {}", describe(*w.event)));
        if (w.completions == 0) throw std::runtime_error("the receiver accepted every frame, faults included");
        for (std::size_t i = 0; i < w.completions; ++i) {
            if (wcs[i].status != IBV_WC_SUCCESS) {
                throw std::runtime_error(fmt::format("sender: work completion failed: {}", describe_failed_wc(wcs[i])));
            }
        }
    }
}

} // namespace rdmastream::check
