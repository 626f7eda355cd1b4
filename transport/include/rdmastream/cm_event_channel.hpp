// The rdma_cm event channel: waits with a timeout, copies out what the caller
// needs and acks every event at once (an unacked event blocks rdma_destroy_id).
#pragma once

#include "rdmastream/verbs_owners.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace rdmastream {

struct CmEvent {
    rdma_cm_event_type type{};
    int status = 0;
    rdma_cm_id* id = nullptr; // for CONNECT_REQUEST: a new id the caller must own
    std::array<std::byte, 256> private_data{};
    std::size_t private_data_len = 0;

    std::span<const std::byte> private_bytes() const noexcept {
        return {private_data.data(), private_data_len};
    }
};

// "RDMA_CM_EVENT_REJECTED (status 8)" etc.
std::string describe(const CmEvent& ev);

// What an unexpected event on an established connection means for the
// user: "the RDMA device was removed (...)", "the peer disconnected", ...
std::string explain_lost_connection(const CmEvent& ev);

// An rdma_cm event other than the one the connection needed, or none in time.
class CmEventError : public std::runtime_error {
public:
    CmEventError(const std::string& what, std::optional<CmEvent> event)
        : std::runtime_error(what), event_(std::move(event)) {}
    // nullopt: timed out.
    const std::optional<CmEvent>& event() const noexcept { return event_; }

private:
    std::optional<CmEvent> event_;
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
