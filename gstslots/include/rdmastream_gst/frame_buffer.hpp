// SPDX-License-Identifier: LGPL-2.1-or-later
// A frame's header on the GstBuffer that carries it: the one rule rdmasrc
// and rdmarecv --gst stamp their buffers by, whether the buffer wraps the
// frame's slot (SlotBuffers) or holds a copy (FrameCopies), and the
// conversions between the wire's fields and GStreamer's both ways (rdmasink
// writes the wire's side).
#pragma once

#include "rdmastream/frame.hpp"

#include <gst/gst.h>

#include <cstdint>

namespace rdmastream::gst {

// GstBuffer flags <-> wire flags (frame.hpp: kFrameDiscont, kFrameDeltaUnit,
// kFrameHeader, kFrameCorrupted are DISCONT, DELTA_UNIT, HEADER, CORRUPTED).
// Other buffer flags do not travel.
std::uint16_t wire_flags(GstBufferFlags flags) noexcept;
GstBufferFlags buffer_flags(std::uint16_t wire_flags) noexcept;

// GstClockTime <-> wire nanoseconds (GST_CLOCK_TIME_NONE is kNoTime,
// no_time.hpp; any other negative wire time reads as none too).
std::int64_t wire_time(GstClockTime t) noexcept;
GstClockTime clock_time(std::int64_t wire) noexcept;

// Stamps `buffer` (its metadata writable) with `header`: PTS and DURATION
// (none where the sender gave none), the flags that travel (set or cleared
// as the sender had them; the buffer's other flags are left alone) and
// OFFSET, the frame number (as video sources number their frames; a gap is
// what the sender's live policy dropped).
//
// `origin` is the sender's time that becomes 0 on the buffer: 0 keeps the
// sender's timestamps, which is what rdmasrc does (a live source: its
// buffers carry the times the sending pipeline gave them, so a receiving
// pipeline sees the same stream as the sending one). rdmarecv --gst passes
// its first frame's pts: its appsrc is not live, and a pipeline that is not
// live starts its clock at 0 when it prerolls on the first frame, so frames
// stamped with the sender's own times (a capture clock's, or a sender's
// that had been running for an hour) would wait that long at a sink that
// synchronises.
// A pts before `origin` (timestamps that went back) is stamped 0.
void stamp_frame_buffer(GstBuffer* buffer, const FrameHeader& header, GstClockTime origin = 0) noexcept;

} // namespace rdmastream::gst
