// SPDX-License-Identifier: LGPL-2.1-or-later
// The side data block: encoder for the sender, checking decoder for the
// receiver (side_data_wire.hpp).
#include "wire/side_data_wire.hpp"

#include "wire/wire_bytes.hpp"

namespace rdmastream {

const char* name(SideDataKind kind) noexcept {
    switch (kind) {
    case SideDataKind::kCaptions: return "captions";
    case SideDataKind::kTimecode: return "timecode";
    case SideDataKind::kMasteringDisplay: return "mastering display";
    case SideDataKind::kContentLight: return "content light";
    }
    return "unknown";
}

namespace wire {

using namespace detail;

namespace {

// Why `size` bytes are wrong for `kind`; nullptr when they are right or the
// kind is unknown (the caller tells those apart).
const char* size_refused(SideDataKind kind, std::size_t size) noexcept {
    switch (kind) {
    case SideDataKind::kCaptions:
        return size > 0 && size % 3 == 0 ? nullptr : "not a whole number of 3-byte cc_data triplets";
    case SideDataKind::kTimecode:
        return size == 4 || size == 8 || size == 12 ? nullptr : "not 1 to 3 four-byte SMPTE 12M words";
    case SideDataKind::kMasteringDisplay: return size == 24 ? nullptr : "not 24 bytes";
    case SideDataKind::kContentLight: return size == 4 ? nullptr : "not 4 bytes";
    }
    return nullptr;
}

bool known(std::uint16_t kind) noexcept { return kind >= 1 && kind <= 4; }

} // namespace

std::size_t side_data_size(std::span<const SideData> entries) {
    if (entries.size() > kMaxSideDataEntries) {
        throw UserError(fmt::format("a frame carries at most {} side data entries, not {}", kMaxSideDataEntries,
                                    entries.size()));
    }
    std::size_t size = 0;
    unsigned seen = 0;
    for (const SideData& e : entries) {
        const auto kind = static_cast<std::uint16_t>(e.kind);
        if (!known(kind)) {
            throw UserError(fmt::format("side data of unknown kind {}", kind));
        }
        if (const char* why = size_refused(e.kind, e.bytes.size())) {
            throw UserError(fmt::format("{} side data of {} bytes: {}", name(e.kind), e.bytes.size(), why));
        }
        if (e.bytes.size() > 0xffff || (seen & (1u << kind)) != 0) {
            throw UserError(fmt::format("{} side data twice in one frame, or over 65535 bytes", name(e.kind)));
        }
        seen |= 1u << kind;
        size += kSideDataEntryHead + e.bytes.size();
    }
    return size;
}

std::size_t encode_side_data(std::span<const SideData> entries, std::span<std::byte> out) {
    std::size_t at = 0;
    for (const SideData& e : entries) {
        store_le<std::uint16_t>(out, at, static_cast<std::uint16_t>(e.kind));
        store_le<std::uint16_t>(out, at + 2, static_cast<std::uint16_t>(e.bytes.size()));
        std::memcpy(out.subspan(at + kSideDataEntryHead, e.bytes.size()).data(), e.bytes.data(), e.bytes.size());
        at += kSideDataEntryHead + e.bytes.size();
    }
    return at;
}

std::size_t decode_side_data(std::span<const std::byte> block, std::uint16_t slot,
                             std::span<SideData, kMaxSideDataEntries> out) {
    std::size_t n = 0, at = 0;
    unsigned seen = 0;
    while (at < block.size()) {
        if (block.size() - at < kSideDataEntryHead) {
            throw ProtocolError(fmt::format("slot {} side data: {} bytes left at offset {}, too few for an "
                                            "entry's 4-byte head",
                                            slot, block.size() - at, at));
        }
        const auto kind = load_le<std::uint16_t>(block, at);
        const std::size_t length = load_le<std::uint16_t>(block, at + 2);
        if (!known(kind)) {
            throw ProtocolError(fmt::format("slot {} side data entry {} has unknown kind {}", slot, n, kind));
        }
        const auto k = static_cast<SideDataKind>(kind);
        if (length > block.size() - at - kSideDataEntryHead) {
            throw ProtocolError(fmt::format("slot {} side data entry {} ({}) claims {} bytes, {} are left in "
                                            "the block",
                                            slot, n, name(k), length, block.size() - at - kSideDataEntryHead));
        }
        if (const char* why = size_refused(k, length)) {
            throw ProtocolError(fmt::format("slot {} side data entry {} ({}) of {} bytes: {}", slot, n, name(k),
                                            length, why));
        }
        if ((seen & (1u << kind)) != 0) {
            throw ProtocolError(fmt::format("slot {} side data has {} twice", slot, name(k)));
        }
        if (n == kMaxSideDataEntries) { // unreachable with one of each known kind; kept for new kinds
            throw ProtocolError(fmt::format("slot {} side data has more than {} entries", slot, kMaxSideDataEntries));
        }
        seen |= 1u << kind;
        out[n++] = SideData{k, block.subspan(at + kSideDataEntryHead, length)};
        at += kSideDataEntryHead + length;
    }
    return n;
}

} // namespace wire
} // namespace rdmastream
