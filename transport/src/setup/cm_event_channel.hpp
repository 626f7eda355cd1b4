// SPDX-License-Identifier: LGPL-2.1-or-later
// The rdma_cm event channel: waits with a timeout, copies out what the caller
// needs and acks every event at once (an unacked event blocks rdma_destroy_id),
// handing a connect request's new id over in an owner of its own.
#pragma once

#include "setup/verbs_owners.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace rdmastream {

// The private data an rdma_cm event carried (a connect request's, an
// accept's, a reject's): copied out of librdmacm's buffer, which the ack frees.
struct CmPrivateData {
    std::array<std::byte, 256> bytes{};
    std::size_t size = 0;

    std::span<const std::byte> view() const noexcept { return {bytes.data(), size}; }
};

// One rdma_cm event, acked already. Move-only: a connect request's new id
// is owned by its event until someone takes it.
struct CmEvent {
    rdma_cm_event_type type{};
    int status = 0;
    // The id the event is about, to read (its addresses, its device) and
    // never to destroy: for CONNECT_REQUEST the one `request` owns; for any
    // other event an id the channel's owner holds already (a connection's
    // own, a listener's). Valid as long as that owner.
    rdma_cm_id* id = nullptr;
    // CONNECT_REQUEST only: the id librdmacm made for the request, ours
    // from the moment the event is read. Destroyed with the event (the CM
    // then refuses the request) unless taken with std::move.
    CmId request;
    CmPrivateData private_data;

    std::span<const std::byte> private_bytes() const noexcept { return private_data.view(); }
};

// "RDMA_CM_EVENT_REJECTED (status 8)" etc.
std::string describe(const CmEvent& ev);

// What an unexpected event on an established connection means for the
// user: "the RDMA device was removed (...)", "the peer disconnected", ...
std::string explain_lost_connection(const CmEvent& ev);

// An rdma_cm event other than the one the connection needed, or none in time.
// Copyable, as an exception must be: the copies share the event.
class CmEventError : public std::runtime_error {
public:
    CmEventError(const std::string& what, std::optional<CmEvent> event)
        : std::runtime_error(what),
          event_(event ? std::make_shared<const CmEvent>(std::move(*event)) : nullptr) {}
    // The same event as `cause`, told with another text.
    CmEventError(const std::string& what, const CmEventError& cause) : std::runtime_error(what), event_(cause.event_) {}
    // nullptr: timed out.
    const CmEvent* event() const noexcept { return event_.get(); }

private:
    std::shared_ptr<const CmEvent> event_;
};

class CmEventChannel {
public:
    // Throws UserError with the Soft-RoCE recipe when the machine has no RDMA device.
    CmEventChannel();

    rdma_event_channel* get() const noexcept { return ch_.get(); }
    int fd() const noexcept { return ch_->fd; }

    // The next event, or nullopt when none came within `timeout`.
    std::optional<CmEvent> next(std::chrono::milliseconds timeout);
    // The next event if one comes within `timeout`: it must be `want`, else
    // CmEventError as expect() throws it. nullopt: none came.
    std::optional<CmEvent> next(std::chrono::milliseconds timeout, rdma_cm_event_type want, const char* what);

    // The next event, which must be `want`; anything else, or nothing within
    // `timeout`, throws naming `what` and the event that came instead.
    CmEvent expect(rdma_cm_event_type want, std::chrono::milliseconds timeout, const char* what);

private:
    EventChannel ch_;
};

} // namespace rdmastream
