// SPDX-License-Identifier: LGPL-2.1-or-later
// The stream's messages (docs/protocol.md): the ring advert, the
// immediates, control messages, credits, the stream format and the slot
// header. The handshake's are in wire_handshake.cpp.
#include "wire/wire_bytes.hpp"

#include <algorithm>
#include <stdexcept>

namespace rdmastream::wire {

using namespace detail;

namespace {

// Ring advert layout.
constexpr std::size_t kAdvFlags = 6;
constexpr std::uint16_t kAdvFlagLive = 1, kAdvFlagWindows = 2;
constexpr std::size_t kAdvMagic = 0, kAdvVersion = 4, kAdvSlotCount = 8, kAdvSlotSize = 12,
                      kAdvAddr = 16, kAdvRkey = 24, kAdvFlow = 28, kAdvSlotBase = 30;
// Slot header layout.
constexpr std::size_t kHdrMagic = 0, kHdrSize = 4, kHdrFlags = 6, kHdrSeq = 8, kHdrPts = 16,
                      kHdrDuration = 24, kHdrPayload = 32, kHdrSlot = 36, kHdrGen = 38, kHdrFormat = 40,
                      kHdrFlow = 42, kHdrSideData = 44, kHdrSentAt = 48;

} // namespace

std::size_t encode(const RingAdvert& advert, std::span<std::byte> out) {
    const std::size_t size = ring_advert_size(advert.slot_count, advert.windows());
    if (out.size() < size || (advert.windows() && advert.slot_rkeys.size() != advert.slot_count)) {
        throw std::invalid_argument("ring advert: no room, or window keys that are not one per slot");
    }
    std::fill(out.begin(), out.begin() + kRingAdvertSize, std::byte{0});
    store_le<std::uint32_t>(out, kAdvMagic, kAdvertMagic);
    store_le<std::uint16_t>(out, kAdvVersion, kProtocolVersion);
    store_le<std::uint32_t>(out, kAdvSlotCount, advert.slot_count);
    store_le<std::uint32_t>(out, kAdvSlotSize, advert.slot_size);
    store_le<std::uint64_t>(out, kAdvAddr, advert.addr);
    store_le<std::uint32_t>(out, kAdvRkey, advert.rkey);
    store_le<std::uint16_t>(out, kAdvFlags,
                            static_cast<std::uint16_t>((advert.live ? kAdvFlagLive : 0) |
                                                       (advert.windows() ? kAdvFlagWindows : 0)));
    out[kAdvFlow] = static_cast<std::byte>(advert.flow);
    store_le<std::uint16_t>(out, kAdvSlotBase, advert.slot_base);
    for (std::size_t i = 0; i < advert.slot_rkeys.size(); ++i) {
        store_le<std::uint32_t>(out, kRingAdvertSize + i * kWindowKeySize, advert.slot_rkeys[i]);
    }
    return size;
}

RingAdvertBytes encode(const RingAdvert& advert) {
    RingAdvertBytes out(ring_advert_size(advert.slot_count, advert.windows()));
    encode(advert, out);
    return out;
}

RingAdvert decode_ring_advert(std::span<const std::byte> bytes) {
    check_magic_and_version(bytes, kRingAdvertSize, kAdvertMagic, "ring advert");
    RingAdvert a;
    a.slot_count = load_le<std::uint32_t>(bytes, kAdvSlotCount);
    a.slot_size = load_le<std::uint32_t>(bytes, kAdvSlotSize);
    a.addr = load_le<std::uint64_t>(bytes, kAdvAddr);
    a.rkey = load_le<std::uint32_t>(bytes, kAdvRkey);
    const std::uint16_t flags = load_le<std::uint16_t>(bytes, kAdvFlags);
    a.live = (flags & kAdvFlagLive) != 0;
    const bool windows = (flags & kAdvFlagWindows) != 0;
    if ((flags & ~(kAdvFlagLive | kAdvFlagWindows)) != 0) {
        throw ProtocolError(fmt::format("ring advert has flags {:#06x}: only bits 0 (live) and 1 (memory windows) "
                                        "are defined, the rest are reserved and must be zero",
                                        flags));
    }
    check_reserved(bytes, kAdvFlow + 1, kAdvSlotBase, "ring advert", "reserved@29");
    a.flow = std::to_integer<std::uint8_t>(bytes[kAdvFlow]);
    a.slot_base = load_le<std::uint16_t>(bytes, kAdvSlotBase);
    if (a.flow >= kMaxFlows) {
        throw ProtocolError(fmt::format("ring advert is for flow {} (flows 0..{})", a.flow, kMaxFlows - 1));
    }
    if (a.slot_count == 0 || a.slot_count > kMaxSlots) {
        throw ProtocolError(fmt::format("ring advert has {} slots (allowed 1..{})", a.slot_count, kMaxSlots));
    }
    if (std::uint32_t{a.slot_base} + a.slot_count > kMaxSlots) {
        throw ProtocolError(fmt::format("ring advert's slots {}..{} go past slot {}", a.slot_base,
                                        a.slot_base + a.slot_count - 1, kMaxSlots - 1));
    }
    if (a.slot_size <= kSlotHeaderSize || a.slot_size > kMaxSlotSize) {
        throw ProtocolError(fmt::format("ring advert has slot size {} (allowed {}..{})", a.slot_size,
                                        kSlotHeaderSize + 1, kMaxSlotSize));
    }
    if (a.addr == 0) {
        throw ProtocolError("ring advert has a null address");
    }
    const std::uint64_t total = std::uint64_t{a.slot_count} * a.slot_size;
    if (a.addr > UINT64_MAX - total) {
        throw ProtocolError("ring advert's address range wraps around");
    }
    if (windows) {
        if (a.rkey != 0) {
            throw ProtocolError(fmt::format("ring advert has memory windows and ring rkey {:#x}: with windows the "
                                            "ring has no remote access of its own, its rkey must be 0",
                                            a.rkey));
        }
        const std::size_t need = ring_advert_size(a.slot_count, true);
        if (bytes.size() < need) {
            throw ProtocolError(fmt::format("ring advert with memory windows too short: {} bytes, need {} (a "
                                            "window key for each of its {} slots)",
                                            bytes.size(), need, a.slot_count));
        }
        a.slot_rkeys.resize(a.slot_count);
        for (std::size_t i = 0; i < a.slot_count; ++i) {
            a.slot_rkeys[i] = load_le<std::uint32_t>(bytes, kRingAdvertSize + i * kWindowKeySize);
        }
    }
    return a;
}

std::uint32_t encode(SlotImm imm) noexcept {
    return static_cast<std::uint32_t>(imm.generation) << 16 | imm.slot;
}

SlotImm decode_slot_imm(std::uint32_t value, std::uint32_t slot_count) {
    SlotImm imm{static_cast<std::uint16_t>(value & 0xffffu), static_cast<std::uint16_t>(value >> 16)};
    if (imm.slot >= slot_count) {
        throw ProtocolError(fmt::format("immediate {:#010x} names slot {}, but the ring has {} slots",
                                        value, imm.slot, slot_count));
    }
    return imm;
}

std::uint32_t encode(Control kind) noexcept {
    return static_cast<std::uint32_t>(kind) << 16 | kControlSlot;
}

Control decode_control(std::uint32_t value) {
    const std::uint32_t kind = value >> 16;
    if ((value & 0xffffu) != kControlSlot || kind < static_cast<std::uint32_t>(Control::kEndOfStream) ||
        kind > static_cast<std::uint32_t>(Control::kJoin)) {
        throw ProtocolError(fmt::format("unknown control message {:#010x}", value));
    }
    return static_cast<Control>(value >> 16);
}

std::size_t encode_credits(std::span<const Credit> credits, std::span<std::byte> out) noexcept {
    for (std::size_t i = 0; i < credits.size(); ++i) {
        store_le<std::uint32_t>(out, i * kCreditSize, encode(credits[i].imm));
        store_le<std::uint32_t>(out, i * kCreditSize + 4, credits[i].rkey);
    }
    return credits.size() * kCreditSize;
}

std::size_t decode_credits(std::span<const std::byte> bytes, std::uint32_t slot_count, std::span<Credit> out) {
    const std::size_t n = bytes.size() / kCreditSize;
    if (bytes.size() % kCreditSize != 0 || n == 0 || n > slot_count || n > out.size()) {
        throw ProtocolError(fmt::format("a credit message of {} bytes: it must list 1..{} credits of {} bytes",
                                        bytes.size(), slot_count, kCreditSize));
    }
    for (std::size_t i = 0; i < n; ++i) {
        out[i].imm = decode_slot_imm(load_le<std::uint32_t>(bytes, i * kCreditSize), slot_count);
        out[i].rkey = load_le<std::uint32_t>(bytes, i * kCreditSize + 4);
    }
    return n;
}

namespace {
constexpr std::uint32_t kFormatMagic = 0x434d4452; // "RDMC"
constexpr std::size_t kFmtFlow = 6, kFmtId = 8, kFmtPlaneCount = 10, kFmtMaxFrame = 12, kFmtPlanes = 16,
                      kFmtMaxSideData = kFmtPlanes + 8 * kMaxPlanes, kFmtCapsLen = kFmtMaxSideData + 4,
                      kFmtCaps = kFmtCapsLen + 2;
static_assert(kFmtCaps + kMaxCapsLength <= kControlPayloadMax);
} // namespace

std::size_t encode(const StreamFormat& f, std::span<std::byte, kControlPayloadMax> out) {
    if (f.caps.size() > kMaxCapsLength || f.plane_count > kMaxPlanes || f.max_side_data > kMaxSideDataBytes ||
        f.flow >= kMaxFlows) {
        throw std::invalid_argument("stream format: caps longer than 900 bytes, more than 4 planes, more than "
                                    "64 KiB of side data or a flow id past 14");
    }
    std::fill(out.begin(), out.end(), std::byte{0});
    store_le<std::uint32_t>(out, 0, kFormatMagic);
    store_le<std::uint16_t>(out, 4, kProtocolVersion);
    out[kFmtFlow] = static_cast<std::byte>(f.flow);
    store_le<std::uint16_t>(out, kFmtId, f.id);
    out[kFmtPlaneCount] = static_cast<std::byte>(f.plane_count);
    store_le<std::uint32_t>(out, kFmtMaxFrame, f.max_frame_size);
    for (std::size_t i = 0; i < kMaxPlanes; ++i) {
        store_le<std::uint32_t>(out, kFmtPlanes + 8 * i, f.planes[i].offset);
        store_le<std::uint32_t>(out, kFmtPlanes + 8 * i + 4, f.planes[i].stride);
    }
    store_le<std::uint32_t>(out, kFmtMaxSideData, f.max_side_data);
    store_le<std::uint16_t>(out, kFmtCapsLen, static_cast<std::uint16_t>(f.caps.size()));
    for (std::size_t i = 0; i < f.caps.size(); ++i) {
        out[kFmtCaps + i] = static_cast<std::byte>(f.caps[i]);
    }
    return kFmtCaps + f.caps.size();
}

StreamFormat decode_stream_format(std::span<const std::byte> bytes) {
    check_magic_and_version(bytes, kFmtCaps, kFormatMagic, "stream format");
    check_reserved(bytes, kFmtFlow + 1, kFmtId, "stream format", "reserved@7");
    check_reserved(bytes, kFmtPlaneCount + 1, kFmtMaxFrame, "stream format", "reserved@11");
    StreamFormat f;
    f.id = load_le<std::uint16_t>(bytes, kFmtId);
    f.flow = std::to_integer<std::uint8_t>(bytes[kFmtFlow]);
    if (f.flow >= kMaxFlows) {
        throw ProtocolError(fmt::format("stream format {} is for flow {} (flows 0..{})", f.id, f.flow, kMaxFlows - 1));
    }
    f.plane_count = static_cast<std::uint8_t>(bytes[kFmtPlaneCount]);
    f.max_frame_size = load_le<std::uint32_t>(bytes, kFmtMaxFrame);
    if (f.id == 0) {
        throw ProtocolError("stream format has id 0");
    }
    if (f.max_frame_size == 0 || f.max_frame_size > kMaxSlotSize - kSlotHeaderSize) {
        throw ProtocolError(fmt::format("stream format wants {}-byte frames (allowed 1..{})", f.max_frame_size,
                                        kMaxSlotSize - kSlotHeaderSize));
    }
    if (f.plane_count > kMaxPlanes) {
        throw ProtocolError(fmt::format("stream format has {} planes (at most {})", f.plane_count, kMaxPlanes));
    }
    for (std::size_t i = 0; i < f.plane_count; ++i) {
        f.planes[i] = {load_le<std::uint32_t>(bytes, kFmtPlanes + 8 * i),
                       load_le<std::uint32_t>(bytes, kFmtPlanes + 8 * i + 4)};
        if (f.planes[i].offset >= f.max_frame_size) {
            throw ProtocolError(fmt::format("stream format: plane {} starts at {}, beyond the {}-byte frame", i,
                                            f.planes[i].offset, f.max_frame_size));
        }
    }
    // The plane entries past plane_count are reserved.
    check_reserved(bytes, kFmtPlanes + 8 * f.plane_count, kFmtMaxSideData, "stream format",
                   "planes past plane_count");
    f.max_side_data = load_le<std::uint32_t>(bytes, kFmtMaxSideData);
    if (f.max_side_data > kMaxSideDataBytes) {
        throw ProtocolError(fmt::format("stream format declares {} bytes of side data per frame (at most {})",
                                        f.max_side_data, kMaxSideDataBytes));
    }
    if (std::uint64_t{f.max_frame_size} + f.max_side_data > kMaxSlotSize - kSlotHeaderSize) {
        throw ProtocolError(fmt::format("stream format wants {}-byte frames with {} bytes of side data (allowed "
                                        "{} in all)",
                                        f.max_frame_size, f.max_side_data, kMaxSlotSize - kSlotHeaderSize));
    }
    const std::size_t caps_len = load_le<std::uint16_t>(bytes, kFmtCapsLen);
    if (caps_len > kMaxCapsLength || kFmtCaps + caps_len > bytes.size()) {
        throw ProtocolError(fmt::format("stream format: caps of {} bytes do not fit the message", caps_len));
    }
    if (bytes.size() != kFmtCaps + caps_len) {
        throw ProtocolError(fmt::format("stream format of {} bytes, its caps end at byte {}: a message carries "
                                        "nothing after its caps",
                                        bytes.size(), kFmtCaps + caps_len));
    }
    f.caps.reserve(caps_len);
    for (std::size_t i = 0; i < caps_len; ++i) {
        const auto c = static_cast<unsigned char>(bytes[kFmtCaps + i]);
        if (c < 0x20 || c >= 0x7f) {
            throw ProtocolError(fmt::format("stream format: caps byte {} is not printable ASCII ({:#04x})", i, c));
        }
        f.caps.push_back(static_cast<char>(c));
    }
    std::size_t depth = 0;
    for (const char c : f.caps) {
        if (c == '(' || c == '[' || c == '{' || c == '<') {
            if (++depth > kMaxCapsNesting) {
                throw ProtocolError(fmt::format("stream format: caps nest brackets more than {} deep", kMaxCapsNesting));
            }
        } else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) {
            --depth;
        }
    }
    return f;
}

namespace {
constexpr std::size_t kClkClock = 6, kClkFlags = 7, kClkPts0 = 8, kClkReserved = 16;
constexpr std::uint8_t kClkFlagSynchronized = 1;
} // namespace

std::array<std::byte, kClockSize> encode(const ClockAnchor& a) noexcept {
    std::array<std::byte, kClockSize> out{};
    store_le<std::uint32_t>(out, 0, kClockMagic);
    store_le<std::uint16_t>(out, 4, kProtocolVersion);
    out[kClkClock] = static_cast<std::byte>(a.clock);
    out[kClkFlags] = static_cast<std::byte>(a.synchronized ? kClkFlagSynchronized : 0);
    store_le<std::int64_t>(out, kClkPts0, a.pts0_ns);
    return out;
}

ClockAnchor decode_clock(std::span<const std::byte> bytes) {
    check_magic_and_version(bytes, kClockSize, kClockMagic, "clock anchor");
    if (bytes.size() != kClockSize) {
        throw ProtocolError(fmt::format("clock anchor of {} bytes (it has {})", bytes.size(), kClockSize));
    }
    const auto clock = std::to_integer<unsigned>(bytes[kClkClock]);
    if (clock != static_cast<unsigned>(AnchorClock::kRealtime) && clock != static_cast<unsigned>(AnchorClock::kTai)) {
        throw ProtocolError(fmt::format("clock anchor names clock {} (1: realtime, 2: TAI)", clock));
    }
    const auto flags = std::to_integer<unsigned>(bytes[kClkFlags]);
    if ((flags & ~unsigned{kClkFlagSynchronized}) != 0) {
        throw ProtocolError(fmt::format("clock anchor has flags {:#04x}: bits above 0 are reserved and must be zero",
                                        flags));
    }
    check_reserved(bytes, kClkReserved, kClockSize, "clock anchor", "reserved@16");
    ClockAnchor a;
    a.clock = static_cast<AnchorClock>(clock);
    a.synchronized = (flags & kClkFlagSynchronized) != 0;
    a.pts0_ns = load_le<std::int64_t>(bytes, kClkPts0);
    return a;
}

void encode(const SlotHeader& h, std::span<std::byte, kSlotHeaderSize> out) noexcept {
    store_le<std::uint32_t>(out, kHdrMagic, kSlotMagic);
    store_le<std::uint16_t>(out, kHdrSize, static_cast<std::uint16_t>(kSlotHeaderSize));
    store_le<std::uint16_t>(out, kHdrFlags, h.flags);
    store_le<std::uint64_t>(out, kHdrSeq, h.sequence);
    store_le<std::int64_t>(out, kHdrPts, h.pts);
    store_le<std::int64_t>(out, kHdrDuration, h.duration);
    store_le<std::uint32_t>(out, kHdrPayload, h.payload_size);
    store_le<std::uint16_t>(out, kHdrSlot, h.imm.slot);
    store_le<std::uint16_t>(out, kHdrGen, h.imm.generation);
    // format_id, flow, reserved@43 (zero) and side_data_size in one 8-byte
    // store, as the decoder reads them; then sent_at and reserved@56 (zero).
    store_le<std::uint64_t>(out, kHdrFormat,
                            std::uint64_t{h.format_id} | std::uint64_t{h.flow} << 16 |
                                std::uint64_t{h.side_data_size} << 32);
    store_le<std::uint64_t>(out, kHdrSentAt, h.sent_at_ns);
    store_le<std::uint64_t>(out, kHdrSentAt + 8, 0);
}

SlotHeader decode_slot_header(std::span<const std::byte> slot, SlotImm expected) {
    if (slot.size() <= kSlotHeaderSize) {
        throw ProtocolError(fmt::format("slot of {} bytes cannot hold a header", slot.size()));
    }
    if (auto magic = load_le<std::uint32_t>(slot, kHdrMagic); magic != kSlotMagic) {
        throw ProtocolError(fmt::format("slot {} has bad header magic {:#010x}", expected.slot, magic));
    }
    if (auto size = load_le<std::uint16_t>(slot, kHdrSize); size != kSlotHeaderSize) {
        throw ProtocolError(fmt::format("slot {} header size {} (expected {})", expected.slot, size,
                                        kSlotHeaderSize));
    }
    SlotHeader h;
    h.flags = load_le<std::uint16_t>(slot, kHdrFlags);
    h.sequence = load_le<std::uint64_t>(slot, kHdrSeq);
    h.pts = load_le<std::int64_t>(slot, kHdrPts);
    h.duration = load_le<std::int64_t>(slot, kHdrDuration);
    h.payload_size = load_le<std::uint32_t>(slot, kHdrPayload);
    h.imm.slot = load_le<std::uint16_t>(slot, kHdrSlot);
    h.imm.generation = load_le<std::uint16_t>(slot, kHdrGen);
    const auto format_word = load_le<std::uint64_t>(slot, kHdrFormat);
    h.format_id = static_cast<std::uint16_t>(format_word);
    h.flow = static_cast<std::uint8_t>(format_word >> 16);
    h.side_data_size = static_cast<std::uint32_t>(format_word >> 32);
    h.sent_at_ns = load_le<std::uint64_t>(slot, kHdrSentAt);
    if ((h.flags & ~kFrameFlagsDefined) != 0) {
        throw ProtocolError(fmt::format("slot {} header has flags {:#06x}: bits above 3 are reserved and must be "
                                        "zero",
                                        expected.slot, h.flags));
    }
    // reserved@43 (1 byte, between the flow and side_data_size) and
    // reserved@56 must be zero. A few compares per frame; the flow is the
    // receiver's to check against the slot's range.
    if ((format_word & 0xff000000u) != 0) {
        check_reserved(slot, kHdrFlow + 1, kHdrSideData, "slot header", "reserved@43");
    }
    if (load_le<std::uint64_t>(slot, kHdrSentAt + 8) != 0) {
        check_reserved(slot, kHdrSentAt + 8, kSlotHeaderSize, "slot header", "reserved@56");
    }
    if (std::uint64_t{h.payload_size} + h.side_data_size > slot.size() - kSlotHeaderSize) {
        throw ProtocolError(fmt::format("slot {} claims a {} byte payload and {} bytes of side data, room is {}",
                                        expected.slot, h.payload_size, h.side_data_size,
                                        slot.size() - kSlotHeaderSize));
    }
    if (h.imm.slot != expected.slot || h.imm.generation != expected.generation) {
        throw ProtocolError(fmt::format("slot {} header names slot {} generation {}, the completion "
                                        "said generation {}: stale or torn slot",
                                        expected.slot, h.imm.slot, h.imm.generation, expected.generation));
    }
    return h;
}

} // namespace rdmastream::wire
